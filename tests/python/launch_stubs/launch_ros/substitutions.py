class FindPackageShare:
    def __init__(self, package):
        self.package = package

    def perform(self, context):
        return context.share(self.package)
