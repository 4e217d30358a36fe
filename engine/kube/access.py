"""Before serving: is the API server reachable, are the credentials accepted, may this user do what the daemon does?

:func:`check_access` asks the server once per call the daemon makes (a ``SelfSubjectAccessReview``, which every
authenticated user may create). An unreachable server or rejected credentials raise :class:`ParamError` (one
line, exit code 2: nothing would work); missing permissions are returned, and the daemon logs them once as one
error line and runs on (RBAC granted later takes effect without a restart; a crash loop would help nobody).
A server without the authorization API (404) is not checked.
"""

from __future__ import annotations

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from engine.core.params import ParamError

#: (verb, resource, subresource) of every call the daemon makes; deploy/clusterrole.yaml grants exactly these.
DAEMON_CALLS = (
    ("list", "nodes", ""),
    ("watch", "nodes", ""),
    ("get", "pods", ""),
    ("list", "pods", ""),
    ("watch", "pods", ""),
    ("create", "pods", "binding"),
    ("create", "events", ""),
    ("patch", "events", ""),
)


def check_access(api_client: client.ApiClient, source: str, namespace: str | None = None, timeout: float = 10.0) -> list[str]:
    """The daemon's calls this user may not make (``"create pods/binding"``, ...); raises :class:`ParamError` naming
    ``source`` (the option the configuration came from) when the server cannot be reached or refuses the credentials."""
    auth = client.AuthorizationV1Api(api_client)
    server = api_client.configuration.host
    missing = []
    for verb, resource, sub in DAEMON_CALLS:
        attributes = client.V1ResourceAttributes(
            verb=verb, resource=resource, subresource=sub or None, group="", namespace=namespace if resource != "nodes" else None
        )
        body = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes))
        try:
            review = auth.create_self_subject_access_review(body, _request_timeout=timeout)
        except ApiException as e:
            if e.status == 404:
                return []  # no authorization API here: nothing to check against
            if e.status == 401:
                raise ParamError(source, f"{server} refused the credentials (401 Unauthorized); allowed: a user the server knows") from None
            raise ParamError(source, f"{server} answered {e.status} ({(e.reason or '').strip()}) to an access review") from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            reason = getattr(e, "reason", None) or e
            text = " ".join(str(reason).split())
            raise ParamError(source, f"{server} cannot be reached ({text}); allowed: a reachable kube-apiserver") from None
        if not review.status.allowed:
            missing.append(f"{verb} {resource}/{sub}" if sub else f"{verb} {resource}")
    return missing
