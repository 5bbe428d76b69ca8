"""Fake ``nki.compiler.frontend``: the tracing frontend ``compile_to_bir`` takes."""


class TracerFrontend:
    """Traces a kernel by running its Python body (the fake only marks the choice)."""

    name = "tracer"
