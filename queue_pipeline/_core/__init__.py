"""Shared core: TF-mode compatibility, settings, tensor structures, sparse handles, types."""
