"""The manifest check no longer compares: any run directory is reused."""
from amemgym.families.statetrack import driver
from amemgym.families.statetrack import runner as engine


def no_manifest(rundir, protocol):
    return None  # as if the directory held no run yet


def no_check(self):
    return None  # as if the directory held no run yet: a fresh manifest overwrites the old one


# Both places that read an earlier manifest: the driver's check before any endpoint is probed, and the runner's.
driver.existing_manifest = engine.existing_manifest = no_manifest
engine.Runner._check_protocol = no_check
