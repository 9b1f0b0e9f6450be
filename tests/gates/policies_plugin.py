"""Custom policies used by the runtime tests (loaded as ``policies_plugin:Name``)."""

from __future__ import annotations

from infomark.gates.policies import HookResult, TurnContext


class CiteSources:
    """A research-agent policy: after three web fetches, ask for citations; keeps a counter."""

    name = "cite_sources"
    severity = 6
    expires_after = 1

    def after_tool_batch(self, ctx: TurnContext) -> HookResult | None:
        fetched = int(ctx.policy_state.get("fetched", 0))
        fetched += sum(1 for r in ctx.tool_results if r.tool_class == "web")
        state = {"fetched": fetched}
        if fetched < 3:
            return HookResult(state=state)
        return HookResult(
            instructions=(f"{fetched} pages fetched: cite the source of each statement.",),
            key=str(fetched // 3),
            reason=f"{fetched} web fetches",
            evidence={"fetched": fetched},
            notes=(f"fetched={fetched}",),
            state=state,
        )


class NeedsChangelog:
    """Refuses the finish until a CHANGELOG.md was edited in this session."""

    name = "needs_changelog"

    def before_finalize(self, ctx: TurnContext) -> HookResult:
        edited = list(ctx.working_set.get("files_edited", []))
        if "CHANGELOG.md" in edited:
            return HookResult(resolved=True)
        return HookResult(
            instructions=("Add a line to CHANGELOG.md before you finish.",),
            continue_=False,
            reason="no changelog entry",
        )


class Broken:
    name = "broken"

    def after_tool_batch(self, ctx: TurnContext) -> HookResult:
        raise RuntimeError("this policy is broken")


class Nameless:
    def after_tool_batch(self, ctx: TurnContext) -> None:
        return None
