"""Test double of nkipy: fixed device timings, a NEFF file, and the call's options."""
