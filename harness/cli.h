/* cli.h - the command table of validate_skill; maps internal error codes to exit statuses. */
#ifndef VS_CLI_H
#define VS_CLI_H

/** Parse argv, run one mode, return the exit status: 0 ok, 1 failure, 2 usage. */
int cli_main(int argc, char **argv);

#endif /* VS_CLI_H */
