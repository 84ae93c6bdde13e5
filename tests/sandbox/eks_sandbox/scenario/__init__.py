# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scenario files: the YAML that describes a sandbox cluster (schema: tests/sandbox/README.md "Scenario schema").

- `fields`: `ScenarioError` and `Section`, the reader of one mapping that checks each key's type and names its
  key path in errors (e.g. ``workloads[2].pdb.min_available``);
- `schema`: what a scenario holds: the vocabularies, the default timings, and one reader per entry (the
  cluster, an AMI, a node group, a workload, a fault) that validates it and fills its defaults;
- `loader`: `load_scenario`, which reads a file or mapping, applies the schema section by section and checks
  what only the whole scenario shows (duplicate names, references between sections, recommended AMIs).
"""
