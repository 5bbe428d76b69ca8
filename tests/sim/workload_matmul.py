"""A small lhsT @ rhs workload for the simulator tests."""

INPUT_SPECS = {"lhsT": ((256, 256), "bfloat16"), "rhs": ((256, 1024), "bfloat16")}


def f_numpy(lhsT, rhs):
    return lhsT.T @ rhs
