"""Static analysis shared by the rules: imports, model objects, the mode flow.

Rules ask questions of ``FileContext.facts`` (a ``FileFacts``); they do not
re-walk the tree for things the analysis already knows.
"""
