"""Pipelines to learn from and to evaluate on: the application suite (`generator.apps`)."""
