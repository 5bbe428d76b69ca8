"""Fake ``nki.compiler.frontend``: the tracing frontend ``compile_to_bir`` takes as
``frontend=`` (its public callers pass one; the class name follows the public
runner awslabs/nki-autotune before e7676de: unverified for this release)."""


class TracerFrontend:
    """Traces a kernel by running its Python body (the fake only marks the choice)."""

    name = "tracer"
