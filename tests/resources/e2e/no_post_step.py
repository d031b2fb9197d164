"""A step module without post() (check_e2e.c): refused when the plan is made, with its line."""
NAME = "test.no_post_step"
BACKEND = "cpu"
SUMMARY = "a step module that forgot post()"


def output_shape(shape):
    return [shape.batch, 64]


def prepare(args):
    return 0


def pre(args):
    pass
