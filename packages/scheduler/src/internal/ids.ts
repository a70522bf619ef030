/** Ids for fires, overrides and the runs a fire starts: short random hex, so names stay readable. */
import { randomBytes } from "node:crypto"

export const hex = (bytes: number) => randomBytes(bytes).toString("hex")

/** A run's name: its routine's (or template's) name and a random suffix, within the 63-character limit. */
export const runName = (prefix: string) => `${prefix.slice(0, 50)}-${hex(4)}`
