/*
 * publish.h - results to a team's server over HTTP(S) with libcurl, and cards from one.
 *
 * Publishing (`--record CARD --publish URL`, `--validate CARD --publish URL`): the card's record and
 * the eval dir's result.json are POSTed as one JSON document (schema validate_skill.publish/1) with
 * Content-Type application/json and an Idempotency-Key (the payload's sha256), so a server can drop
 * a payload it has seen. The bearer token comes only from the environment (VS_PUBLISH_TOKEN), never
 * from the command line, and never appears in a message or a log; it is sent only over https or to
 * a loopback address. TLS peer and host verification stay on; redirects are not followed (the token
 * would travel with them). Each attempt has a connect timeout and a total timeout; connection
 * errors, timeouts and 5xx answers are retried with exponential backoff. A payload that could not
 * be delivered is never lost: it is written to the outbox (results/.outbox/, one file per payload)
 * and `--flush --publish URL` sends the outbox later, removing what was delivered.
 *
 * Fetching (`--fetch URL`): a card is downloaded (at most 1 MiB), parsed and linted like `--static`,
 * and written to skills/<id>.md; an existing card with other bytes is replaced only with --force.
 */
#ifndef VS_PUBLISH_H
#define VS_PUBLISH_H

#define VS_PUBLISH_SCHEMA "validate_skill.publish/1"
#define VS_PUBLISH_TOKEN_ENV "VS_PUBLISH_TOKEN"
#define VS_FETCH_MAX_BYTES (1u << 20)

struct publish_options {
	const char *url;
	const char *outbox;       /* default "results/.outbox" */
	double timeout_s;         /* total time of one attempt (default 60) */
	double connect_timeout_s; /* default 10 */
	int retries;              /* further attempts after a connection error or 5xx (default 3) */
	double backoff_s;         /* wait before the first retry, doubled for each next one (default 1;
	                           * VS_PUBLISH_BACKOFF_MS overrides, for tests) */
};

/**
 * The payload for a recorded card: {"schema", "card": {id, path, hash}, "record": the card's
 * validation block, "result": result.json of eval_dir, "result_sha256"}. The evidence is verified
 * first (evidence_load). *out is malloc'd JSON text. Errors: those of card_load/evidence_load.
 */
int publish_payload(char **out, const char *card_path, const char *eval_dir);

/**
 * POST payload to o->url. Returns 0 when delivered (2xx). Otherwise the payload is queued in the
 * outbox and the return is 1 for a transient failure (unreachable, timed out, 5xx after every
 * retry: a warning is printed) or VS_EFAIL when the server refused it (4xx, TLS verification
 * failure), VS_EUSAGE for a URL that cannot be used (bad scheme, credentials in it, the token
 * over plain http to a non-loopback host), VS_EIO when the outbox cannot be written.
 */
int publish_send(const struct publish_options *o, const char *payload);

/**
 * Send every payload in the outbox to o->url, oldest first; delivered files are removed. Stops at
 * the first transient failure (the server is down: the rest would fail too). *sent and *left
 * count the payloads. Returns 0 when the outbox is empty afterwards, 1 when some remain after a
 * transient failure, VS_EFAIL when the server refused one (it stays queued).
 */
int publish_flush(const struct publish_options *o, int *sent, int *left);

/**
 * `--fetch URL`: import a card into skills_dir (default "skills"). Refused with one line: larger
 * than VS_FETCH_MAX_BYTES, an HTTP error, a card that does not parse or lint (the message points
 * into the fetched text), an id that is not a plain file name, or an existing card with other
 * bytes when force is 0 (VS_EUSAGE). Sets *path_out (malloc'd, may be NULL) to the card written.
 */
int publish_fetch(char **path_out, const char *url, const char *skills_dir, int force, const struct publish_options *o);

#endif /* VS_PUBLISH_H */
