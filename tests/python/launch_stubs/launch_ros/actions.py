class Node:
    def __init__(self, package, executable, name=None, namespace=None, arguments=None, parameters=None,
                 remappings=None, output=None, **kwargs):
        if kwargs:
            raise TypeError(f"unsupported Node arguments in the stub: {sorted(kwargs)}")
        self.package = package
        self.executable = executable
        self.name = name
        self.namespace = namespace
        self.arguments = list(arguments or [])
        self.parameters = list(parameters or [])
        self.remappings = list(remappings or [])
