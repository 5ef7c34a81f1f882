"""Rebuilding legacy graphs as tf.data: lifting per-record regions into functions."""
