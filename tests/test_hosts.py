"""The docs hosts glassllm supports: MkDocs 1.6 and ProperDocs 1.6, both with a plugin system.

MkDocs 2.0 and Zensical run no plugins, so a site built by them would silently lack every
generated page; these tests fail, saying what to install, when such a host is in place.
"""

from importlib.metadata import PackageNotFoundError, entry_points, version

import pytest
from packaging.version import Version

from tests import hosts

SUPPORTED = {"mkdocs": (Version("1.6"), Version("2")),
             "properdocs": (Version("1.6.7"), Version("1.7"))}
HOW = "pip install -e '.[docs]' (it installs MkDocs <2 and ProperDocs 1.6)"


@pytest.mark.parametrize("host", hosts.HOSTS)
def test_installed_host_can_run_our_plugin(host):
    low, high = SUPPORTED[host]
    try:
        installed = Version(version(host))
    except PackageNotFoundError:
        if host != hosts.HOST:  # CI's ProperDocs session runs where MkDocs is not installed
            pytest.skip(f"{host} is not installed, and this session builds with {hosts.HOST}")
        pytest.fail(f"{host} is not installed; {HOW}")
    assert low <= installed < high, (
        f"{host} {installed} is installed, but glassllm's plugin needs {host} >={low},<{high}"
        + ("; MkDocs 2.0 has no plugin system and would build a site without the step pages"
           if host == "mkdocs" else "") + f": {HOW}")


@pytest.mark.parametrize("group", ["mkdocs.plugins", "properdocs.plugins"])
def test_plugin_is_registered_for_both_hosts(group):
    found = {ep.name: ep.value for ep in entry_points(group=group)}
    assert found.get("glassllm") == "docs_build.host.plugin:GlassLMPlugin", (
        f"the 'glassllm' plugin is not registered under {group}: reinstall with {HOW}")


def test_the_session_host_is_the_one_building():
    build, load_config = hosts.build_functions()
    assert build.__module__.split(".")[0] == hosts.HOST
    plugin_base = __import__("mkdocs.plugins", fromlist=["BasePlugin"]).BasePlugin
    assert plugin_base.__module__.split(".")[0] == hosts.HOST
