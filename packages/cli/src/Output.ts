/**
 * Where the command writes. stdout carries only the answer (pipe-clean: `flotta run ... | jq` works);
 * everything for the person at the terminal (footer, progress, logs) goes to stderr.
 */
import { Effect } from "effect"

export const stdout = (text: string) =>
  Effect.sync(() => void process.stdout.write(text.endsWith("\n") ? text : text + "\n"))

export const stderr = (text: string) =>
  Effect.sync(() => void process.stderr.write(text.endsWith("\n") ? text : text + "\n"))

/** Raw stderr, for in-place progress lines. */
export const stderrRaw = (text: string) => Effect.sync(() => void process.stderr.write(text))

/** Progress and colour only for a person at a terminal, never for a pipe or a file. */
export const stderrIsTTY = () => process.stderr.isTTY === true
