"""Pydantic models of an OLC v1 contract (re-exported from the ``models_*`` modules).

Attribute names equal the YAML keys of the schema; aliases are normalised to the canonical key.
Every typed block is frozen and rejects unknown keys. Import models from here.
"""

from __future__ import annotations

from lakelogic.contract.models_base import OLCModel
from lakelogic.contract.models_contract import EXTENSION_KEY_PATTERN, SEMVER_PATTERN, Contract
from lakelogic.contract.models_fields import MASKING_STRATEGIES, ForeignKey, Model, ModelField
from lakelogic.contract.models_meta import (
    NOTIFICATION_EVENTS,
    Confidence,
    DownstreamConsumer,
    ExternalLogic,
    Extraction,
    Info,
    Notification,
    Preprocessing,
    Quarantine,
    Retry,
    RowCountSLO,
    ServiceLevelObjective,
    ServiceLevels,
    UpstreamContractRef,
)
from lakelogic.contract.models_ops import *  # noqa: F403 - the op parameter models
from lakelogic.contract.models_ops import __all__ as _ops_all
from lakelogic.contract.models_quality import *  # noqa: F403 - rules and shorthands
from lakelogic.contract.models_quality import __all__ as _quality_all
from lakelogic.contract.models_source import (
    LOAD_MODES,
    SOURCE_FORMATS,
    SOURCE_TYPES,
    WATERMARK_STRATEGIES,
    DltEndpoint,
    DltSource,
    Environment,
    Link,
    PostIngestion,
    SchemaPolicy,
    Server,
    Source,
    SourcePartition,
)
from lakelogic.contract.models_target import (
    FACT_TYPES,
    STRATEGIES,
    TARGET_FORMATS,
    Fact,
    Lineage,
    Materialization,
    Scd2,
    UnknownMember,
)
from lakelogic.contract.models_transform import OP_DEFAULT_PHASE, OP_NAMES, OpParams, Transformation

# Name used by the generated schema for the model field definition.
FieldDefinition = ModelField

__all__ = [
    "EXTENSION_KEY_PATTERN",
    "FACT_TYPES",
    "LOAD_MODES",
    "MASKING_STRATEGIES",
    "NOTIFICATION_EVENTS",
    "OP_DEFAULT_PHASE",
    "OP_NAMES",
    "SEMVER_PATTERN",
    "SOURCE_FORMATS",
    "SOURCE_TYPES",
    "STRATEGIES",
    "TARGET_FORMATS",
    "WATERMARK_STRATEGIES",
    "Confidence",
    "Contract",
    "DltEndpoint",
    "DltSource",
    "DownstreamConsumer",
    "Environment",
    "ExternalLogic",
    "Extraction",
    "Fact",
    "FieldDefinition",
    "ForeignKey",
    "Info",
    "Lineage",
    "Link",
    "Materialization",
    "Model",
    "ModelField",
    "Notification",
    "OLCModel",
    "OpParams",
    "PostIngestion",
    "Preprocessing",
    "Quarantine",
    "Retry",
    "RowCountSLO",
    "Scd2",
    "SchemaPolicy",
    "Server",
    "ServiceLevelObjective",
    "ServiceLevels",
    "Source",
    "SourcePartition",
    "Transformation",
    "UnknownMember",
    "UpstreamContractRef",
    *_ops_all,
    *_quality_all,
]
