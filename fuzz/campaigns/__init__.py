"""The campaigns by name (``python -m openpto.fuzz NAME``)."""
from __future__ import annotations

from ..harness import Campaign
from .arguments import ArgumentsCampaign
from .bytecode import BytecodeCampaign
from .parse import ParseCampaign
from .programs import ProgramsCampaign

CAMPAIGNS: dict[str, type[Campaign]] = {c.name: c for c in (ParseCampaign, BytecodeCampaign,
                                                              ArgumentsCampaign, ProgramsCampaign)}

__all__ = ["CAMPAIGNS"]
