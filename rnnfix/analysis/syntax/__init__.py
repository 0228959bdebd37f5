"""Syntax and scopes: structural helpers over ``ast`` (``walks``), functions,
classes and call resolution in one file (``scopes``), dotted names, import
bindings and must-aliases. Knows nothing about the mode flow."""
