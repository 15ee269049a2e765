"""Kubernetes export: a LeaderWorkerSet manifest (``leaderworkerset.x-k8s.io/v1``).

One LWS group per independent server: the leader pod runs the serving command of node 0, the
worker pods those of the other nodes. GPUs per pod come from the drawn nodes (the GPUs of the plan
on each node). The container runs its command through ``/bin/sh -c`` so it can read the variables
LWS sets (``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE``, ``LWS_WORKER_INDEX``); every user value in
that command is shell-quoted.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from studio.core.project import Project
from studio.io.export import common as c


@dataclass(frozen=True)
class LwsSpec:
    """What a LeaderWorkerSet needs from an engine exporter."""

    engine: str
    image: str
    resource: str  # Kubernetes device resource of the GPUs (``nvidia.com/gpu``, ``amd.com/gpu``)
    groups: tuple[c.Group, ...]
    leader_command: str  # shell text run by the leader pod
    worker_command: str | None  # shell text run by worker pods (None for one-pod groups)
    port: int


def dns_name(text: str, fallback: str, limit: int = 40) -> str:
    """A DNS-1123 label from free text (lower case, ``a-z0-9-``, at most ``limit`` characters so
    the pod names LWS derives stay under 63).

    A name cut to fit ends in 8 hex digits of a hash of the whole text, so two long names that
    share their first characters stay different.
    """
    full = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    if len(full) <= limit:
        return full or fallback
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    head = full[: limit - 9].strip("-")
    return f"{head}-{digest}" if head else digest


def _container(spec: LwsSpec, command: str, gpus: int, leader: bool) -> dict:
    box: dict = {
        "name": spec.engine,
        "image": spec.image,
        "command": ["/bin/sh", "-c", command.replace(" \\\n    ", " ").strip()],
        "resources": {"limits": {spec.resource: gpus}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if leader:
        box["ports"] = [{"containerPort": spec.port, "name": "http"}]
        box["readinessProbe"] = {
            "tcpSocket": {"port": spec.port},
            "initialDelaySeconds": 30,
            "periodSeconds": 10,
        }
    return box


def _pod(spec: LwsSpec, command: str, gpus: int, leader: bool) -> dict:
    return {
        "metadata": {"labels": {"role": "leader" if leader else "worker"}},
        "spec": {
            "containers": [_container(spec, command, gpus, leader)],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        },
    }


def lws_manifest(project: Project, spec: LwsSpec) -> tuple[str, list[str]]:
    """The manifest text (a LeaderWorkerSet and a Service for the leaders) and its notes."""
    notes: list[str] = []
    first = spec.groups[0]
    shapes = {tuple(n.gpus for n in g.nodes) for g in spec.groups}
    if len(shapes) > 1:
        notes.append(
            "The servers of this plan differ in shape; a LeaderWorkerSet's groups are identical, so "
            f"every group uses the first one's ({', '.join(str(n.gpus) for n in first.nodes)} GPUs per pod)."
        )
    worker_gpus = {n.gpus for n in first.nodes[1:]}
    if len(worker_gpus) > 1:
        notes.append("Worker pods of one group get the largest GPU count of its nodes.")
    name = dns_name(f"{project.name}-{spec.engine}", spec.engine)
    size = len(first.nodes)
    template: dict = {
        "size": size,
        "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": _pod(spec, spec.leader_command, first.nodes[0].gpus, True),
    }
    if size > 1 and spec.worker_command is not None:
        template["workerTemplate"] = _pod(spec, spec.worker_command, max(worker_gpus), False)
    else:
        template["workerTemplate"] = template.pop("leaderTemplate")
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": len(spec.groups),
            "leaderWorkerTemplate": template,
            "startupPolicy": "LeaderCreated",
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-leader"},
        "spec": {
            "selector": {"leaderworkerset.sigs.k8s.io/name": name, "role": "leader"},
            "ports": [{"name": "http", "port": spec.port, "targetPort": spec.port, "protocol": "TCP"}],
            "type": "ClusterIP",
        },
    }
    return c.dump_yaml(lws) + "---\n" + c.dump_yaml(service), notes
