"""RNF006: a model loaded for prediction runs in train mode and with grad
enabled. The rule is ``rule``; ``fix`` builds its finding and edits."""
