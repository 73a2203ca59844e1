import type { Json, JsonEncodable } from './canonical-json.js';
import type { BenchConfig, StepConfig } from './config/load.js';
import type { FieldPath } from './config/yaml-source.js';
import type { Diagnostic } from './diagnostic.js';
import type { Result } from './result.js';
import type { Artifact } from './artifact.js';
import type { CacheKey, Sha256 } from './digest.js';
import type { OutputManifest } from './store/action-cache.js';
import type { Cas, OutputEntry } from './store/cas.js';
import type { Store } from './store/store.js';

/** The host environment; a step reads only what it declares. */
export type HostEnv = Readonly<Record<string, string | undefined>>;

/** One expanded instance of a step: e.g. `run/task-7/treatment/2`. */
export interface GraphNode {
  id: string;
  step: StepConfig;
  kind: StepKind;
  matrix: Readonly<Record<string, string>>;
  upstream: GraphNode[];
  downstream: GraphNode[];
  /**
   * Facts the program that built the graph attaches to the node for its step to read
   * (e.g. the CLI gives an export node its cohort's freeze record). Part of the key.
   */
  annotation?: Json;
}

/** A file input the step declares: a path, directory or glob relative to the config file. */
export interface FileInputSpec {
  pattern: string;
  /** Where it was written, for errors. */
  field: FieldPath;
  /**
   * The input is an arm's treatment (a file the arm adds to the agent's tree): what a pull
   * request under review may change (`pairbench review` lets it differ from the base's only
   * where every node that reads it reads it as such).
   */
  treatment?: { step: string; arm: string };
}

export interface StagedFile {
  /** Relative, forward slashes. */
  path: string;
  entry: OutputEntry;
}

export interface UpstreamOutputs {
  node: string;
  /** The upstream record's key (what it was built from). */
  key: CacheKey;
  outputs: OutputManifest;
}

/** Everything a step may touch while it executes. It knows nothing of scheduling or the store's layout. */
export interface ExecutionContext {
  node: GraphNode;
  config: BenchConfig;
  /** A fresh, empty directory that belongs to this execution only; removed afterwards. */
  workDir: string;
  /** The node's file inputs, exactly the bytes that were hashed into its key. */
  files: StagedFile[];
  /** The outputs of the upstream nodes, selected as the step asked. */
  upstream: UpstreamOutputs[];
  /** Writes stored outputs into the work directory (verifying each blob) and stores new ones. */
  artifacts: Pick<Cas, 'materialize' | 'materializeAsync' | 'putPath' | 'putBytes' | 'putOpenFile' | 'putTree' | 'read' | 'readTreeFiles' | 'entryAt'>;
  /** Adds a line to the node's log: what a person needs to see when it fails (kept with its record). */
  log(line: string): void;
  /**
   * The node's log as a file, for a child process to write to (made when first asked for; lines
   * logged before are in it, and lines logged after are appended to it).
   */
  readonly logFile: string;
  /** Where the store keeps a bare mirror of the git repository at `source` (the step fills it; the layout is the store's). */
  mirrorOf(source: string): string;
  hostEnv: HostEnv;
  signal: AbortSignal;
  /**
   * Marks this execution's result as transient: used downstream in this run but not
   * cached, so the next run tries again (e.g. an infrastructure error, which audit
   * must see and exclude, but which must not stick). `retryNow`: the fault is one a
   * second try at once is likely to clear (a treatment's server that came up late): the
   * engine runs the node again now, up to IMMEDIATE_TRIES in all, each try on record.
   */
  doNotCache(reason: string, options?: { retryNow?: boolean }): void;
  /**
   * What the node's result means in one word and a line, when it is not simply "done"
   * (a task certify rejected): the progress output shows it instead of "done".
   */
  outcome?(word: string, detail: string): void;
}

export type { StepFailure } from './step-failure.js';
import type { StepFailure } from './step-failure.js';

/** One prerequisite of a step kind, checked before any node runs (`pairbench doctor` lists them all). */
export interface PreflightCheck {
  name: string;
  ok: boolean;
  /** What was found (never a credential's value). */
  detail: string;
  /** What to do about it; null when the check passes. */
  fix: string | null;
}

/** What a kind's preflight may look at. */
export interface PreflightContext {
  /** The environment pairbench runs in (a credential is checked by name: its value is never put in a message). */
  env: HostEnv;
  /** The store (where materialize keeps its repository mirrors). */
  store: Store;
}

/** A file input of a node, found and hashed (pipeline/inputs.ts resolves them). */
export interface ResolvedInput {
  /** Relative to the project root, forward slashes. */
  path: string;
  abs: string;
  type: 'file' | 'dir';
  digest: Sha256;
}

/** What a kind's annotate hook may read. */
export interface AnnotationContext {
  env: HostEnv;
  store: Store;
  /** Each node's resolved file inputs, by node id. */
  inputs: ReadonlyMap<string, ResolvedInput[]>;
  /** The config file the graph was loaded from (what sits beside it: a committed record lock). */
  configFile?: string;
}

/** A step kind: a pure description of inputs -> key -> outputs. Registered by name. */
export interface StepKind {
  name: string;
  /** What one of its nodes is, and several, in a person's words ("agent attempt", "agent attempts"). */
  title: { one: string; many: string };
  /**
   * The outputs a node of `step` writes, by their descriptors (every output written is declared):
   * `show` says what each is, and a step taking all of an upstream's outputs checks each JSON one
   * by its producer's descriptor. A consumer tells a producer by the descriptor it declares (the
   * same object), never by an output's name, which a command step may also declare.
   */
  outputs(step: StepConfig): readonly Artifact[];
  /**
   * The values of a matrix dimension written as a source (`task: {from: tasks, select: ...}`),
   * drawn when the graph is built (so the freeze and every key see the list, never the
   * selection). A kind without it refuses such a dimension.
   */
  matrixSource?(step: StepConfig, dimension: string, source: Record<string, unknown>): Result<string[], Diagnostic[]>;
  /** Whether its nodes run in a sandbox: doctor checks each backend and image its steps use. */
  sandboxed?: boolean;
  /**
   * What its steps need from this machine (an agent CLI at its pinned version, a credential, a
   * reachable repository), each missing one named with its fix. Run by doctor, never by run.
   */
  preflight?(steps: readonly StepConfig[], ctx: PreflightContext): Promise<PreflightCheck[]>;
  /** Bumped whenever the kind's behaviour changes; part of every key. */
  version: number;
  /**
   * Fields of its steps' spec (dotted paths) that its key does not read, and so the
   * preregistration freeze does not hold (e.g. a cohort's `version` number): they cannot change
   * a result. Everything the key reads is frozen (pipeline/freeze.ts); the freeze property test
   * checks that every other field of the kind's schema moves the freeze, and these do not.
   */
  unfrozen?: readonly string[];
  /**
   * Its result reads a verdict (an analysis, an interim look, a gate, an export): producing or
   * reusing one is an observation, which binds the preregistered versions it reads.
   */
  observes?: boolean;
  /**
   * Each execution of one of its nodes is a random draw (an agent attempt, a verifier's or a
   * judge's run): under a preregistered version, a key drawn once is restored from its record,
   * never drawn again unseen (RunOptions.recall).
   */
  draws?: boolean;
  /**
   * Steps its nodes read whatever `needs` says (joined on shared matrix dimensions like needs,
   * but a node with no match simply goes without): a guarantee that must not depend on an edge
   * a user remembers to write (verify reads the canary calibrations of its tasks' certify step).
   */
  impliedNeeds?(step: StepConfig, steps: ReadonlyMap<string, StepConfig>): string[];
  /** Checks that need the whole DAG (e.g. an input read from a step that is not in needs). */
  check?(step: StepConfig, steps: ReadonlyMap<string, StepConfig>): Diagnostic[];
  /**
   * Facts from outside the config that its nodes' keys hold (the image IDs the engine has now,
   * a cohort's registered history), put on each node's `annotation`. Called once with all of
   * the kind's nodes by pipeline/annotate.ts wherever a graph is loaded, so every caller of the
   * library computes the keys the CLI computes.
   */
  annotate?(nodes: readonly GraphNode[], ctx: AnnotationContext): Promise<void>;
  /** The slice of the step's config that decides its result, for this node (encoded as canonical JSON, which checks it). */
  keyConfig(node: GraphNode, hostEnv: HostEnv): JsonEncodable;
  /** Declared file inputs for this node. */
  fileInputs(node: GraphNode): FileInputSpec[];
  /** Which outputs of an upstream node this node reads (`name?`: if present); undefined means all of them. */
  selectUpstream?(node: GraphNode, upstream: GraphNode): string[] | undefined;
  execute(ctx: ExecutionContext): Promise<Result<OutputManifest, StepFailure>>;
  /** The order in which this step's nodes are queued for execution (default: matrix order). */
  order?(nodes: GraphNode[]): GraphNode[];
  /** Words for a changed field of keyConfig (path below `config`), e.g. "cmd". */
  describeConfigField?(path: readonly string[]): string | undefined;
  /**
   * Nodes this step puts between nodes of steps upstream of it (e.g. the interim looks of
   * a sequential analysis: each needs the attempts so far and is needed by the next ones).
   * `nodesOf` gives the nodes of any step already expanded.
   */
  checkpoints?(step: StepConfig, nodesOf: (step: string) => readonly GraphNode[]): Checkpoint[];
}

/** A node a step adds between other nodes: it needs `after` and is needed by `before`. */
export interface Checkpoint {
  /** Its id is `<step>/<name>`. */
  name: string;
  /** The kind that executes it (its step is the step that added it). */
  kind: StepKind;
  matrix: Record<string, string>;
  /** Facts for its kind to read (GraphNode.annotation; part of its key). */
  annotation?: Json;
  after: GraphNode[];
  before: GraphNode[];
}

export type StepKindRegistry = ReadonlyMap<string, StepKind>;

/**
 * The output the engine adds to a node's result when earlier tries of the same key were
 * transient (see ExecutionContext.doNotCache): a directory `01/`, `02/`, ... holding each
 * earlier try's outputs. A step that reads it selects it as optional (`earlier-tries?`).
 */
export const EARLIER_TRIES = 'earlier-tries';

/** Whether `node`'s kind declares `output` (the same descriptor: a consumer never tells a producer by an output's name). */
export function produces(node: GraphNode, output: Artifact): boolean {
  return node.kind.outputs(node.step).includes(output);
}
