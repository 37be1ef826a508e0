"""The client's address behind a proxy: believed only from the proxy, read from the right."""

from __future__ import annotations

import ipaddress

import pytest
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from config.middleware import client_address, counted_address, trusted_networks

PROXY = [ipaddress.ip_network("10.0.0.0/24"), ipaddress.ip_network("fd00::/64")]


@pytest.mark.parametrize(
    ("remote", "forwarded_for", "client"),
    [
        ("203.0.113.9", "", "203.0.113.9"),  # no proxy, no header
        ("203.0.113.9", "198.51.100.7", "203.0.113.9"),  # not from the proxy: the header proves nothing
        ("10.0.0.5", "198.51.100.7", "198.51.100.7"),  # one proxy
        ("10.0.0.5", "198.51.100.7, 10.0.0.9", "198.51.100.7"),  # two proxies of ours
        ("10.0.0.5", "192.0.2.1, 198.51.100.7", "198.51.100.7"),  # what the client wrote itself is skipped
        ("10.0.0.5", "10.0.0.7,10.0.0.8", "10.0.0.7"),  # only proxies: the first of them
        ("10.0.0.5", "198.51.100.7, garbage", "10.0.0.5"),  # a hop that is no address stops the reading
        ("10.0.0.5", "garbage, 198.51.100.7", "198.51.100.7"),
        ("fd00::2", "2001:db8::7", "2001:db8::7"),
        ("10.0.0.5", "", "10.0.0.5"),
    ],
)
def test_client_address(remote, forwarded_for, client):
    assert client_address(remote, forwarded_for, False, PROXY) == client


def test_any_address_may_be_the_proxy_with_a_star_but_only_one_hop_is_believed():
    any_proxy, networks = trusted_networks(["*"])
    assert any_proxy and networks == []
    assert client_address("203.0.113.9", "192.0.2.1, 198.51.100.7", any_proxy, networks) == "198.51.100.7"


def test_an_unreadable_entry_is_one_clear_sentence(settings):
    with pytest.raises(ImproperlyConfigured, match="FORWARDED_ALLOW_IPS must list addresses"):
        trusted_networks(["10.0.0.5", "proxy.internal"])
    settings.FORWARDED_ALLOW_IPS = ["10.0.0.0/33"]
    errors = [e for e in checks.run_checks() if e.id == "config.E002"]
    assert len(errors) == 1 and "'10.0.0.0/33'" in errors[0].msg


@pytest.mark.parametrize(
    ("address", "counted"),
    [
        ("203.0.113.9", "203.0.113.9"),
        ("::ffff:203.0.113.9", "203.0.113.9"),  # an IPv4 client on a dual-stack socket is that client
        ("2001:db8:1:2:abcd:ef01:2345:6789", "2001:db8:1:2::"),
        ("2001:DB8:1:2::1", "2001:db8:1:2::"),
        ("not an address", "not an address"),
    ],
)
def test_a_limit_per_address_counts_an_ipv6_host_by_its_64(address, counted):
    assert counted_address(address) == counted
