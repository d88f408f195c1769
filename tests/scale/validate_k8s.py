#!/usr/bin/env python3
"""Schema checks of share/k8s/ for `make test-scale` (docs/design/scale.md#kubernetes): the
indexed Job against Kubernetes' own schemas (PyPI kubernetes-validate, strict: an unknown key is
an error), the Argo Workflow against Argo's API types (PyPI hera's models, generated from Argo's
OpenAPI spec, checked here strictly too: every key must be a field of its type). Exit 1 with
the file, the path and what was wrong.

Usage: validate_k8s.py FILE...
"""
import sys
import types
import typing

import yaml


def strict(model, value, path, errors):
    """Every key of `value` a field (by alias) of pydantic `model`, recursively."""
    if not isinstance(value, dict):
        return
    fields = {(f.alias or name): f for name, f in model.model_fields.items()}
    for key, item in value.items():
        if key not in fields:
            errors.append(f"{path}.{key}: not a field of {model.__name__}")
            continue
        check(fields[key].annotation, item, f"{path}.{key}", errors)


def check(annotation, value, path, errors):
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return check(args[0], value, path, errors)
    if origin in (typing.Union, types.UnionType):
        for a in args:
            if a is not type(None):
                check(a, value, path, errors)
        return
    if origin in (list, typing.List) and isinstance(value, list):
        for i, item in enumerate(value):
            check(args[0], item, f"{path}[{i}]", errors)
        return
    if origin in (dict, typing.Dict) and isinstance(value, dict) and len(args) == 2:
        for k, item in value.items():
            check(args[1], item, f"{path}.{k}", errors)
        return
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        # A RootModel wraps its value.
        if "root" in annotation.model_fields and len(annotation.model_fields) == 1:
            return check(annotation.model_fields["root"].annotation, value, path, errors)
        strict(annotation, value, path, errors)


def main():
    import kubernetes_validate
    from hera.workflows.models import Workflow

    bad = 0
    for name in sys.argv[1:]:
        with open(name, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        errors = []
        if doc.get("kind") == "Workflow" and doc.get("apiVersion", "").startswith("argoproj.io/"):
            try:
                Workflow.model_validate(doc)
            except Exception as e:  # pydantic's ValidationError: the paths and the reasons
                errors.append(str(e))
            strict(Workflow, doc, "", errors)
            what = "Argo Workflow (hera's models)"
        else:
            try:
                kubernetes_validate.validate(doc, "1.37.0", strict=True)
            except Exception as e:
                errors.append(str(e).splitlines()[0])
            what = f"{doc.get('kind')} (kubernetes-validate, Kubernetes 1.37, strict)"
        if errors:
            bad += 1
            for e in errors:
                print(f"validate_k8s.py: {name}: {e}", file=sys.stderr)
        else:
            print(f"ok: {name} is a valid {what}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
