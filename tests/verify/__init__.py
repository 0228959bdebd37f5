"""Tests of `rnnfix verify`: the sanitizer, the runner, the CLI, rollback."""
