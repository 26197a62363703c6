/** A step found the server wrong: the scenario fails with this message. */
export class ScenarioFailure extends Error {}

/** The scenario cannot run with this caller: reported as a skip with its reason, never as a pass. */
export class ScenarioSkip extends Error {}
