"""The project index: summaries of what the functions and classes of the other
files of a run do (``index``), the files outside a run that it imports
(``imported``, ``importtext``), and the class facts summaries carry (test
classes, constructor gradients)."""
