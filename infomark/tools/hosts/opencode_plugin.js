// infomark: written by `infomark install opencode` (edits are overwritten; remove with
// `infomark install opencode --uninstall`). It runs infomark's hook for every tool call,
// every user message and every answer of the model: see docs/integrations.md.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const LAUNCHER = fileURLToPath(new URL("./infomark-hook", import.meta.url));
const PYTHON = __PYTHON__; // null: the launcher's own #! line names the interpreter
const EXTRA = __EXTRA__;
const TIMEOUT_MS = __TIMEOUT__ * 1000;
const MAX_FINISH_FAILURES = 3;

function hook(payload) {
  const argv = [...(PYTHON ? [PYTHON, "-I", "-S"] : []), LAUNCHER, "hook", "opencode", ...EXTRA];
  return new Promise((resolve) => {
    let out = "";
    let err = "";
    let done = false;
    const finish = (answer) => {
      if (!done) {
        done = true;
        clearTimeout(timer);
        resolve(answer);
      }
    };
    let child;
    try {
      child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
    } catch (e) {
      return finish({ failed: `could not start ${argv[0]}: ${e}` });
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish({ failed: `no answer within ${TIMEOUT_MS / 1000} s` });
    }, TIMEOUT_MS);
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", (e) => finish({ failed: `could not start ${argv[0]}: ${e.message}` }));
    child.on("close", (code, signal) => {
      const text = err.trim();
      if (code === 2) return finish({ decision: "deny", reason: text || "refused by infomark" });
      if (code !== 0) return finish({ failed: `exit ${code ?? signal}${text ? ": " + text : ""}` });
      if (!out.trim()) return finish({});
      try {
        const answer = JSON.parse(out);
        finish(answer && typeof answer === "object" ? answer : { failed: "not a JSON object" });
      } catch (e) {
        finish({ failed: `unreadable answer: ${out.slice(0, 200)}` });
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

const refused = (answer) => answer.decision === "deny" || answer.decision === "block";
const failure = (answer) =>
  `infomark could not answer (${answer.failed}); ask the user to run \`infomark doctor\` ` +
  "and `infomark install opencode` in the project";

export const InfomarkPlugin = async ({ client, directory }) => {
  const started = new Map(); // sessionID → system context (the protocol)
  const promptContext = new Map(); // sessionID → context of the latest user message
  const pending = new Map(); // callID → context for the tool's output
  const finishFailures = new Map();

  const base = (sessionID, event) => ({ session_id: sessionID, cwd: directory, hook_event_name: event });

  // OpenCode keeps no transcript file, and stores a text part only when it ends (after the
  // tool calls of its message have started): the text of each assistant message is
  // gathered here from the bus events, which reach plugins as they are published.
  const assistant = new Map(); // sessionID → its latest assistant messageID
  const textOf = new Map(); // messageID → Map(partID → text)
  function texts(sessionID) {
    const parts = textOf.get(assistant.get(sessionID));
    return parts ? [...parts.values()].filter(Boolean) : [];
  }

  // What the hook reads of a tool call, before or after it runs (its arguments as given).
  const toolEvent = (input, event, args) => ({
    ...base(input.sessionID, event),
    tool_name: input.tool,
    tool_input: args ?? {},
    tool_use_id: input.callID,
    assistant_texts: texts(input.sessionID),
  });

  function track(event) {
    const p = event.properties ?? {};
    if (event.type === "message.updated" && p.info?.role === "assistant") {
      if (assistant.get(p.info.sessionID) !== p.info.id) {
        textOf.delete(assistant.get(p.info.sessionID));
        assistant.set(p.info.sessionID, p.info.id);
      }
      ended.set(p.info.id, Boolean(p.info.finish) && !p.info.error && p.info.finish !== "tool-calls");
    } else if (event.type === "session.idle" && p.sessionID) {
      idle(p.sessionID).catch((e) => console.error(`infomark: ${e}`));
    } else if (
      event.type === "message.part.updated" &&
      p.part?.type === "text" &&
      p.part.messageID === assistant.get(p.part.sessionID) // not the user's own text
    ) {
      const parts = textOf.get(p.part.messageID) ?? new Map();
      if (p.part.text || !parts.has(p.part.id)) parts.set(p.part.id, p.part.text ?? "");
      textOf.set(p.part.messageID, parts);
    } else if (
      event.type === "message.part.delta" &&
      p.field === "text" &&
      p.messageID === assistant.get(p.sessionID)
    ) {
      const parts = textOf.get(p.messageID) ?? new Map();
      parts.set(p.partID, (parts.get(p.partID) ?? "") + (p.delta ?? ""));
      textOf.set(p.messageID, parts);
    } else if (event.type === "session.deleted" && p.info?.id) {
      textOf.delete(assistant.get(p.info.id));
      assistant.delete(p.info.id);
      started.delete(p.info.id);
      promptContext.delete(p.info.id);
    }
  }

  // A finish is judged when a text of the answer ends (text.complete, below). An answer that
  // ended with no text is judged when the session goes idle: the refusal is then sent as a
  // new prompt, which a long-lived OpenCode (the TUI, `opencode serve`) runs; `opencode run`
  // has exited by then. An answer the user interrupted (an error) is left alone.
  const judged = new Set(); // assistant messageIDs whose finish was judged
  const ended = new Map(); // assistant messageID → it ended as a finish (not tools, no error)
  async function idle(sessionID) {
    const id = assistant.get(sessionID);
    if (!id || judged.has(id) || !ended.get(id)) return;
    judged.add(id);
    const reason = await judge(sessionID, texts(sessionID).join("\n\n"));
    if (reason !== null) {
      await client.session.promptAsync({
        path: { id: sessionID },
        body: { parts: [{ type: "text", text: reason }] },
      });
    }
  }

  async function judge(sessionID, text) {
    // the finish gate: null when the session may end, else the reason it may not
    const answer = await hook({ ...base(sessionID, "text.complete"), last_assistant_message: text });
    if (answer.failed) {
      const n = (finishFailures.get(sessionID) ?? 0) + 1;
      finishFailures.set(sessionID, n);
      if (n <= MAX_FINISH_FAILURES) return `[infomark] the finish is refused: ${failure(answer)}`;
      console.error(`infomark: ${failure(answer)}; the finish was not checked`);
      return null;
    }
    finishFailures.delete(sessionID);
    if (refused(answer)) return answer.reason || "refused by infomark";
    if (typeof answer.message === "string" && answer.message) console.error(`infomark: ${answer.message}`);
    return null;
  }

  async function start(sessionID) {
    if (started.has(sessionID)) return;
    started.set(sessionID, "");
    const answer = await hook({ ...base(sessionID, "session.start"), source: "startup" });
    if (answer.failed) started.set(sessionID, `[infomark: ${failure(answer)}]`);
    else if (typeof answer.context === "string") started.set(sessionID, answer.context);
  }

  return {
    event: async ({ event }) => {
      try {
        track(event);
      } catch (e) {}
    },
    "chat.message": async (input, output) => {
      await start(input.sessionID);
      const prompt = (output.parts ?? []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
      const answer = await hook({ ...base(input.sessionID, "chat.message"), prompt });
      // this prompt's context (instruction packs) replaces the previous prompt's
      promptContext.set(input.sessionID, typeof answer.context === "string" ? answer.context : "");
    },
    "experimental.chat.system.transform": async (input, output) => {
      if (!input.sessionID) return;
      await start(input.sessionID);
      const text = [started.get(input.sessionID), promptContext.get(input.sessionID)];
      if (text.some(Boolean)) output.system.push(text.filter(Boolean).join("\n\n"));
    },
    "tool.execute.before": async (input, output) => {
      const answer = await hook(toolEvent(input, "tool.execute.before", output.args));
      if (answer.failed) throw new Error(`[infomark] the call is refused: ${failure(answer)}`);
      if (refused(answer)) throw new Error(answer.reason || "refused by infomark");
      if (typeof answer.context === "string" && answer.context) pending.set(input.callID, answer.context);
    },
    "tool.execute.after": async (input, output) => {
      const answer = await hook({
        ...toolEvent(input, "tool.execute.after", input.args),
        tool_response: { output: output.output, metadata: output.metadata ?? {} },
      });
      const notes = [pending.get(input.callID)];
      pending.delete(input.callID);
      if (answer.failed) notes.push(`[infomark: no evidence recorded: ${failure(answer)}]`);
      else if (typeof answer.context === "string") notes.push(answer.context);
      const extra = notes.filter(Boolean).join("\n");
      if (extra) output.output = `${output.output ?? ""}\n\n${extra}`;
    },
    "experimental.text.complete": async (input, output) => {
      let message;
      try {
        message = await client.session.message({ path: { id: input.sessionID, messageID: input.messageID } });
      } catch (e) {}
      const parts = message?.data?.parts ?? [];
      if (parts.some((p) => p.type === "tool")) return; // it goes on: not a finish
      if (judged.has(input.messageID)) return; // one judgement per answer
      judged.add(input.messageID);
      const reason = await judge(input.sessionID, output.text);
      if (reason === null) return;
      await client.session.prompt({
        path: { id: input.sessionID },
        body: { noReply: true, parts: [{ type: "text", text: reason }] },
      });
    },
  };
};
