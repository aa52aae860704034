"""The plugin's options as MkDocs validates them, made from the one table of
``site/options.py`` (MkDocs then names a bad option in its own words)."""

from __future__ import annotations

from mkdocs.config import base
from mkdocs.config import config_options

from ..site import options


class _CountOption(config_options.Type):
    """A positive ``int`` option; MkDocs names the option when it refuses a value."""

    def __init__(self, default: int) -> None:
        super().__init__(int, default=default)

    def run_validation(self, value):
        value = super().run_validation(value)
        try:
            return options.check_count(value)
        except ValueError as error:
            raise base.ValidationError(str(error)) from None


def _option(spec: options.Option) -> config_options.BaseConfigOption:
    types = spec.types[0] if len(spec.types) == 1 else spec.types
    if spec.count:
        return _CountOption(default=spec.default)
    if spec.default is None:
        return config_options.Optional(config_options.Type(types))
    return config_options.Type(types, default=spec.default)


# plugins.glassllm.example, then plugins.glassllm: MkDocs reads a Config's options from its
# class attributes, so the classes are made from the tables
ExampleOptions = type("ExampleOptions", (base.Config,),
                      {name: _option(spec) for name, spec in options.EXAMPLE.items()})
GlassLMConfig = type("GlassLMConfig", (base.Config,),
                     {"example": config_options.SubConfig(ExampleOptions),
                      **{name: _option(spec) for name, spec in options.PLUGIN.items()}})
