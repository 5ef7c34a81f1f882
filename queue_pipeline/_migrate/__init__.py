"""``queue-pipeline migrate``: trace, rewrite (libcst), verify; the facade is ``api``."""
