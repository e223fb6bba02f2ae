"""Grafana dashboards for otelbench, as code, and their provisioning.

* :mod:`otelbench.dashboards.build` builds the dashboards with grafana-foundation-sdk (a dev /
  ``dashboards`` extra) and writes the JSON committed under ``dashboards/json``;
* :mod:`otelbench.dashboards.push` provisions datasources, a folder and the dashboards through
  Grafana's HTTP API (grafana-client): ``otelbench dashboards push --grafana URL --token T``;
* :mod:`otelbench.dashboards.names` holds the datasource UIDs, and the vLLM and GenAI client
  metric names used.

Example::

    from otelbench.dashboards.push import push_dashboards
    push_dashboards("http://grafana:3000", token="glsa_...", dashboards_dir=Path("dashboards/json"))
"""

from __future__ import annotations

__all__: list[str] = []
