"""Refuses to build a package without the bundled widget, or with one of another version.

The widget (``src/quantscope/static/widget.js`` and ``widget.css``) is produced by
``node python/js/build.mjs`` from the repository; an sdist carries it, so building a wheel from
the sdist needs no Node.
"""

from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class WidgetPresent(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        static = Path(self.root) / "src" / "quantscope" / "static"
        missing = [f for f in ("widget.js", "widget.css", "VERSION") if not (static / f).is_file()]
        if missing:
            raise RuntimeError(
                f"the bundled widget is missing ({', '.join(missing)} in {static}): "
                "run scripts/build-python.sh (or node python/js/build.mjs after scripts/build-web.sh)"
            )
        bundled = (static / "VERSION").read_text().strip()
        if bundled != self.metadata.version:
            raise RuntimeError(
                f"the bundled widget is version {bundled} but the package is {self.metadata.version}: "
                "rebuild it with node python/js/build.mjs"
            )
