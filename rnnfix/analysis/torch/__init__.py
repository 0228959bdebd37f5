"""The torch API and model objects: which names hold ``nn.Module``s and cuDNN
RNNs, optimizers and the parameters they update, what a class says about its
own ``train()``/``eval()``, data-parallel wrappers and what functions return."""
