"""Fake ``nki.compiler.frontend``: the tracing frontend ``compile_to_bir`` takes (awslabs/nki-autotune before e7676de; unverified beyond that runner)."""


class TracerFrontend:
    """Traces a kernel by running its Python body (the fake only marks the choice)."""

    name = "tracer"
