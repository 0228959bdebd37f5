"""Source text in and out: reading, decoding and atomically writing files,
notebooks as Python and back, and the declarative edits with the libcst
rewrite that applies them."""
