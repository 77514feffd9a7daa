class LaunchConfiguration:
    def __init__(self, variable_name, default=None):
        self.variable_name = variable_name
        self.default = default

    def perform(self, context):
        if self.variable_name not in context.args:
            raise KeyError(f"launch argument {self.variable_name!r} is used but not declared or given")
        return context.resolve(context.args[self.variable_name])


class PathJoinSubstitution:
    def __init__(self, substitutions):
        self.substitutions = list(substitutions)

    def perform(self, context):
        import os
        return os.path.join(*[context.resolve(s) for s in self.substitutions])
