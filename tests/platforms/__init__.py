"""Tests of the platform packages: the contract every surface passes, the hub facade, then one folder each."""
