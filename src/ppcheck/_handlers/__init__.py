"""One module per protocol registering the vector operations this library implements."""
