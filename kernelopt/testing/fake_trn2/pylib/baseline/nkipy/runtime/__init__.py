"""Fake ``nkipy.runtime``: ``execute.baremetal_run_traced_kernel`` (compile then run;
the fake has no device runtime for nkipy, so the run part reports that, as nkipy
does without Spike)."""
