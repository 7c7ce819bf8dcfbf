"""The real-OpenStack test cloud harness (see tests/harness/openstack/ostack and docs/TESTING.md).

Standard library only: `ostack` runs before the cloud's virtualenv exists."""
