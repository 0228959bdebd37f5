"""Grad mode read from the source: ``no_grad``/``inference_mode`` contexts,
code that needs gradients (training steps, attribution), and whether values of
a region reach a gradient use after it."""
