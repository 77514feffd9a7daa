class DeclareLaunchArgument:
    def __init__(self, name, default_value=None, description="", choices=None):
        self.name = name
        self.default_value = default_value
        self.description = description


class SetEnvironmentVariable:
    def __init__(self, name, value):
        self.name = name
        self.value = value
