"""Gradients computed on purpose while a model with a cuDNN RNN is in eval
mode (RNF004, RNF005): in one scope (``in_scope``), reached through calls
(``across_calls``), and ``train()`` used to get past cuDNN's check
(``trainworkaround``)."""
