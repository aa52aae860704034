"""The plugin's options as MkDocs validates them, made from the one table of
``site/options.py`` (MkDocs then names a bad option in its own words)."""

from __future__ import annotations

from mkdocs.config import base
from mkdocs.config import config_options

from ..site import options


class _CheckedOption(config_options.BaseConfigOption):
    """An option of the table, type- and range-checked by ``options.check_value`` (so true is
    no number and a seed no negative one); MkDocs names the option when it refuses a value."""

    def __init__(self, spec: options.Option) -> None:
        super().__init__()
        self.spec = spec
        self.default = spec.default

    def run_validation(self, value):
        if value is None:
            return None  # left out: an optional option without a default
        try:
            return options.check_value(self.spec, value)
        except ValueError as error:
            raise base.ValidationError(str(error)) from None


def _option(spec: options.Option) -> config_options.BaseConfigOption:
    return _CheckedOption(spec)


# plugins.glassllm.example, then plugins.glassllm: MkDocs reads a Config's options from its
# class attributes, so the classes are made from the tables
ExampleOptions = type("ExampleOptions", (base.Config,),
                      {name: _option(spec) for name, spec in options.EXAMPLE.items()})
GlassLMConfig = type("GlassLMConfig", (base.Config,),
                     {"example": config_options.SubConfig(ExampleOptions),
                      **{name: _option(spec) for name, spec in options.PLUGIN.items()}})
