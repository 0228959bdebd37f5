"""The command line: the click commands (``app``) and ``apply -i``'s review
(``interactive``). The only layer that parses argv; nothing below imports it."""
