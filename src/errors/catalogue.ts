/**
 * The FedTensor error catalogue: the one place where every FT code, its message template,
 * its explanation and its fix are written.
 *
 * Three readers share it:
 * - the type-level core (`types/errors.ts`) reads `typeof catalogue` and fills the message
 *   template at type level, so plain `tsc` prints the same text the runtime throws;
 * - the runtime checks (`src/errors/error.ts`) fill the same template with printed types;
 * - the checker plugin and `fedtensor check` add the title, explanation and fix.
 *
 * Placeholders are `{name}`; every placeholder of a template is filled by both the types and
 * the runtime. Keep the templates free of the characters `{` and `}` other than placeholders,
 * because printed CLIENTS types (`{f32[10]}@CLIENTS`) are substituted into them.
 * @example
 * catalogue.FT101.title; // "broadcast() of a value that is not at the SERVER"
 * catalogue.FT101.fix; // what to change
 */
export const catalogue = {
  FT101: {
    title: "broadcast() of a value that is not at the SERVER",
    message: "broadcast() takes a SERVER value, got {got}",
    explanation:
      "broadcast() copies a SERVER value to every client. A CLIENTS value is already at the " +
      "clients, and a local value (a constant, or a member inside map()) has no placement to " +
      "copy from.",
    fix:
      "Pass a SERVER value. Declare the input with atServer(...), or reduce a CLIENTS value " +
      "to the SERVER first (reduceMean, reduceSum).",
  },
  FT102: {
    title: "A value that is not at the CLIENTS, passed to map() or read inside its function",
    message: "map() takes CLIENTS values, got {got}: {advice}",
    explanation:
      "map(f, ...xs) runs f once per client on that client's members of xs. A SERVER value has " +
      "one copy at the coordinator, so there is no per-client member to pass to f; reading it " +
      "from f's closure would be the same mistake.",
    fix:
      "Wrap a SERVER value in broadcast(...) and pass it to map() as an argument. A local value " +
      "(a constant) is not passed at all: use it inside the function, or declare the program " +
      "input with atClients(...) when each client has its own.",
  },
  FT103: {
    title: "Reduction of a value that is not at the CLIENTS",
    message: "{op}() takes CLIENTS values, got {got}",
    explanation:
      "The reductions (reduceSum, reduceMean, reduceMax, reduceMin, reduceWeightedMean, " +
      "aggregate, secureSum) combine the members of a CLIENTS value into one SERVER value. A SERVER or " +
      "local value has no members to combine.",
    fix:
      "Reduce a CLIENTS value, such as the result of map(...). If the value is already at the " +
      "SERVER, use it directly.",
  },
  FT104: {
    title: "Operation mixes SERVER and CLIENTS values",
    message: "{op}() mixes {a} with {b}: broadcast the SERVER value or reduce the CLIENTS one",
    explanation:
      "Operations on placed values run where the values live. One operand lives at the " +
      "SERVER and the other at the CLIENTS, so there is no single place to compute the result.",
    fix:
      "Move one operand: broadcast(...) the SERVER value to compute at the CLIENTS, or " +
      "reduceMean(...)/reduceSum(...) the CLIENTS value to compute at the SERVER.",
  },
  FT105: {
    title: "Placement primitive inside map()",
    message: "{op}() inside a per-client function: its values are local members there",
    explanation:
      "Inside map()'s function (and aggregate()'s accumulate, merge and report) each value is " +
      "one client's local member. broadcast() and the reductions move values between SERVER " +
      "and CLIENTS, which only makes sense outside.",
    fix:
      "Move the broadcast(...) or reduction out of the function: broadcast before map() and " +
      "pass the result in, or reduce the CLIENTS value that map() returns.",
  },
  FT106: {
    title: "Nested placement",
    message: "{got} cannot be placed inside {outer}: placed values do not nest",
    explanation:
      "A placed value (at SERVER or CLIENTS) cannot be a member of another placed value, as in " +
      "atServer(atClients(...)), or a SERVER or CLIENTS value returned from, or read inside, " +
      "map()'s function, whose results are per-client members.",
    fix:
      "Declare specs with one placement, and pass placed values to map() as arguments " +
      "(broadcast SERVER values first) instead of capturing or returning them.",
  },
  FT107: {
    title: "Trees of different structure",
    message: "{op}() operands have different tree structures: {what}",
    explanation:
      "Elementwise operations on trees (records and arrays of tensors, such as model " +
      "parameters) pair the leaves by position, so both trees need the same keys and lengths.",
    fix: "Pass trees of the same structure, or a single tensor or number to combine with every leaf.",
  },
  FT108: {
    title: "Operation outside its trace",
    message: "{op}() {why}",
    explanation:
      "FedTensor operations do not compute anything when called: they record a program while " +
      "program(...) traces its function. A value recorded inside one function (a program, " +
      "map(), a loop body, grad()) belongs to that trace and cannot be used after it ends.",
    fix:
      "Call operations inside program((inputs) => ...), and pass values into map() and loops " +
      "as arguments or carries instead of keeping them in outer variables.",
  },
  FT201: {
    title: "Shapes are not broadcastable",
    message: "{op}() cannot broadcast {a} with {b}: dim {da} vs {db}",
    explanation:
      "Elementwise operations align shapes from the right (numpy rules): each pair of dims " +
      "must be equal or one of them 1. A named dim matches only the same name, 1, or an " +
      "unknown dim.",
    fix:
      "Make the dims agree: reshape(...) to add a unit dim, transpose(...) to reorder axes, or " +
      "sum/mean over the extra axis.",
  },
  FT202: {
    title: "Contracted dims differ",
    message: "{op}() contracts {a} with {b}: inner dim {ka} vs {kb}",
    explanation:
      "matmul(a, b) contracts the last dim of a with the second-to-last dim of b (batch dims " +
      "broadcast); conv2d contracts the input channels with the filter's input channels. The " +
      "contracted dims must be equal.",
    fix: "transpose(...) the operand whose axes are swapped, or fix the weight shape.",
  },
  FT203: {
    title: "reshape() changes the element count",
    message: "reshape() from {a} to {b} changes the element count: {na} vs {nb}",
    explanation:
      "reshape() only reinterprets the elements; the product of the dims must stay the same. " +
      "Counts are compared exactly, for dims up to 10^9 and beyond, and named dims must match " +
      "as factors.",
    fix: "Fix the target shape so its dims multiply to the source's element count, or use -1 for one dim.",
  },
  FT204: {
    title: "Axis out of range",
    message: "{op}() axis {axis} is not valid for {a} of rank {rank}",
    explanation:
      "Axes count from 0 to rank-1, or from -rank to -1 counting from the end. A transpose " +
      "permutation must name every axis exactly once; a slice gives one begin and size per axis.",
    fix: "Use an axis inside the range, or reshape(...) the value to the rank you meant.",
  },
  FT205: {
    title: "Dtype mismatch",
    message: "{op}() expects {want}, got {got}",
    explanation:
      "FedTensor never converts dtypes implicitly: float32 and int32 do not mix, bool is only " +
      "for comparisons and where(), and the float functions (exp, log, softmax, ...) need " +
      "float32. Plain JavaScript numbers take the other operand's dtype.",
    fix:
      "Convert explicitly with cast(x, \"float32\") (or the dtype named in the message). Integer " +
      "class labels are not cast: pass them to sparseSoftmaxCrossEntropy(logits, labels), or turn " +
      "them into float targets with oneHot(labels, classes).",
  },
  FT206: {
    title: "Shapes that must agree differ",
    message: "{op}() needs {want}: {a} vs {b}",
    explanation:
      "concat() joins tensors along one axis, so every other dim must agree; stack() adds a " +
      "new axis, so all shapes must be equal; a loop carry must keep its shape; a jvp() tangent " +
      "has its primal's shape and dtype.",
    fix: "Reshape or slice the operands so the other dims agree; give jvp() tangents shaped like their primals.",
  },
  FT207: {
    title: "Weight is not a scalar per client",
    message: "{op}() takes a scalar f32 weight per client, got {got}",
    explanation:
      "reduceWeightedMean(x, w) computes sum_i(w_i x_i) / sum_i(w_i): w holds one number per " +
      "client, usually its example count.",
    fix: "Pass an f32[]@CLIENTS weight, for example sum(mask) computed inside map().",
  },
  FT208: {
    title: "Loop body or accumulator changes its type",
    message: "{what} returns {got} for {want}: {why}",
    explanation:
      "fori() and scan() run their body again on what it returned, so the carry must keep the " +
      "same tree structure, shapes, dtypes and placements from one step to the next. aggregate() " +
      "folds clients into its accumulator the same way, starting from what zero() returns: local " +
      "constants, the same for every group of clients.",
    fix:
      "Return a carry (or accumulator) of the same type as the initial value; cast or reshape " +
      "where needed. Build zero()'s accumulator from constants such as zeros([10]).",
  },
  FT209: {
    title: "grad() of a function that does not return a scalar",
    message: "{op}() needs a function returning f32[], got {got}",
    explanation:
      "Reverse-mode gradients are defined here for scalar losses: the function must return a " +
      "float32 scalar (at any placement).",
    fix: "Reduce the output to a scalar, for example mean(...) of per-example losses.",
  },
  FT211: {
    title: "Not differentiable",
    message: "{op}() cannot differentiate through {what}",
    explanation:
      "grad() transforms every primitive on the path from the differentiated inputs to the " +
      "loss. A few constructs have no gradient rule: a value that map()'s or aggregate()'s " +
      "functions capture from outside instead of taking as an argument, aggregate()'s zero(), " +
      "and a second gradient through aggregate().",
    fix:
      "Pass the value to map() as a (broadcast) argument, use the built-in reductions instead " +
      "of aggregate() for second derivatives, or wrap the part in stopGradient(...) if it needs no gradient.",
  },
  FT212: {
    title: "einsum() equation not supported or not matching its operands",
    message: "einsum() equation '{equation}' {why}",
    explanation:
      "einsum(equation, ...operands) names each operand's axes with one letter per axis " +
      "('bij,bjk->bik'); letters shared by operands are multiplied together, letters missing from " +
      "the output after '->' (without it: the letters that occur once, in alphabetical order) are " +
      "summed over. FedTensor takes one or two operands and every axis named by its own letter " +
      "(a-z, A-Z): no '...' (ellipsis), no letter twice in one operand (a diagonal or trace), no " +
      "letter in the output that no operand has.",
    fix:
      "Write one letter per axis of each operand, and the output after '->'; contract three " +
      "operands as two einsum() calls; take a diagonal with a mask (mul by an identity) and sum().",
  },
  FT213: {
    title: "einsum() index sized differently by two operands",
    message: "einsum() equation '{equation}' sizes index {index} as {da} in {a} but {db} in {b}",
    explanation:
      "An index letter stands for one axis length: every operand that names it must have the same " +
      "dim there (no broadcasting of size-1 dims). A named dim matches only the same name or an " +
      "unknown dim, which is checked at run time.",
    fix: "Name the axes in the order the operands store them, or transpose(...) the operand whose axes are swapped.",
  },
  FT210: {
    title: "Dims disagree at run time",
    message: "{what}: dim {dim} is {got} here but {want} elsewhere",
    explanation:
      "A named dim (such as \"B\") stands for one size throughout a program run, and a literal " +
      "dim must match the data exactly. The data passed to run() disagrees.",
    fix: "Pass data whose shapes match the program's input specs.",
  },
  FT301: {
    title: "Backend not available",
    message: "backend {backend} is not available: {why}",
    explanation:
      "FedTensor never falls back silently to another backend: a requested backend that " +
      "cannot start is an error.",
    fix:
      "Install the backend's package (for tensorflow: npm i @tensorflow/tfjs-node or " +
      "@tensorflow/tfjs-node-gpu; for webgpu: npm i webgpu@0.6.2, and on Linux a Vulkan driver " +
      "with the loader libvulkan1), or choose another with the backend option or FEDTENSOR_BACKEND.",
  },
  FT302: {
    title: "Bad input data",
    message: "{what}: {why}",
    explanation:
      "Data given to a program or read from a file must match the declared tree, shapes and " +
      "dtypes, and be finite where training needs it.",
    fix: "Check the data source and the program's input specs.",
  },
  FT303: {
    title: "Non-finite update rejected",
    message: "round {round}: {what} is not finite; the server state was left unchanged",
    explanation:
      "A round whose update contains NaN or Infinity would corrupt the model for every later " +
      "round, so it is rejected before it touches the server state.",
    fix: "Lower the learning rate, clip updates, or check the data for extreme values.",
  },
  FT304: {
    title: "Missing or corrupt file",
    message: "{path}: {why}",
    explanation: "A data set, config or checkpoint file is missing, truncated or malformed.",
    fix: "Check the path; reinstall the package that ships the data, or delete the bad file.",
  },
  FT305: {
    title: "Unknown or invalid option",
    message: "{option}: {why}",
    explanation: "An option, flag or config key is unknown or has a value outside its range.",
    fix: "See `fedtensor run --help` for the options and their ranges.",
    /** Where one option's FT305 has its own reason, by the message's {option}: FedTensorError gives these instead. */
    byOption: {
      "--out": {
        explanation:
          "The output folder already holds another run's files (metrics, checkpoints, plot). A new " +
          "run there would mix its files with that run's, or replace them, so it starts only when told which.",
        fix: "Give --resume to continue that run, --overwrite to replace its files, or another folder with --out.",
      },
    },
  },
  FT306: {
    title: "Backend out of memory",
    message: "backend {backend} ran out of memory running the program: {why}",
    explanation:
      "A round holds all its clients' data and results at once. tfjs wasm works in a 32-bit " +
      "memory of at most 4 GiB and fails (an abort, or a 'memory access out of bounds' trap) when " +
      "a round needs more than it can give; native backends fail when the machine's memory does.",
    fix:
      "Use the onnx backend (native memory), fewer clients per round, or smaller client data; " +
      "on wasm, a round's inputs, activations and results must fit in well under 4 GiB.",
  },
  FT307: {
    title: "File system fault",
    message: "{path}: {why}",
    explanation:
      "A run writes its metrics, checkpoints, plot and lock into its output folder. The folder " +
      "must be a folder (not a file, nor under one) on a writable disk with room to spare, and " +
      "not in a virtual file system such as /proc or /sys. A checkpoint that could not be " +
      "written whole is removed, so the previous one stays and --resume continues from it.",
    fix:
      "Choose another --out, free disk space or fix the folder's permissions, then run again " +
      "(with --resume to continue from the last checkpoint).",
  },
  FT308: {
    title: "Run folder in use",
    message: "{path} is in use by {holder}",
    explanation:
      "One process at a time writes a run folder: two writers would interleave their metrics " +
      "and overwrite each other's checkpoints. The folder's lock file names the process that " +
      "holds it; a lock whose process has ended is taken over automatically.",
    fix:
      "Wait for that run to end or stop it, or give another --out. A lock held by a process on " +
      "another machine cannot be checked from here: delete the lock file once that run is over.",
  },
  FT310: {
    title: "A round with no client to aggregate",
    message: "{what}: {why}",
    explanation:
      "A round averages its clients' results weighted by their example counts (or over the " +
      "clients that trained). When every client of the cohort is empty or dropped, there is " +
      "nothing to average: the weights sum to zero and the mean would be NaN.",
    fix:
      "Give the round at least one client with examples. With `fedtensor run`, a round with " +
      "fewer surviving clients than --min-clients is skipped and logged instead.",
  },
  FT313: {
    title: "More than one round",
    message: "{what}: a round in MapReduce form talks to the clients once: {why}",
    explanation:
      "MapReduce form (prepare, work, zero, accumulate, merge, report, update) is one round of " +
      "communication: the server broadcasts once, every client works, their results are " +
      "aggregated, the server updates. A value computed from an aggregation's result that goes " +
      "back to the clients (broadcast again) needs a second round.",
    fix: "Split the program into one program per round, each broadcasting before it aggregates.",
  },
  FT314: {
    title: "CLIENTS result in MapReduce form",
    message: "{what} is {type}: a round in MapReduce form returns SERVER values only",
    explanation:
      "In MapReduce form the clients' results reach the server only through aggregations " +
      "(reduceSum, reduceMean, reduceWeightedMean, reduceMax, reduceMin, aggregate), whose " +
      "accumulators have a fixed size whatever the number of clients. A CLIENTS output (one " +
      "value per client) grows with the cohort, unless it is client state (keepOnClients, such " +
      "as SCAFFOLD's client controls), which each chunk's clients keep.",
    fix: "Aggregate the value at the server, keep it on its clients with keepOnClients if it is their state, or run the program whole (program.run) instead of streamed.",
  },
  FT315: {
    title: "Not expressible in MapReduce form",
    message: "{op}: {why}",
    explanation:
      "A round compiles to MapReduce form when its clients are reached only through broadcast, " +
      "map (and per-client operations) and aggregations, each client independent of the others.",
    fix: "Restructure the program as: server computation, broadcast, per-client work, aggregation, server update.",
  },
  FT316: {
    title: "Not a PRNG key",
    message: "{op}() takes a PRNG key i32[2] from randomKey(), split() or foldIn(), got {got}",
    explanation:
      "Random numbers come only from explicit keys (JAX's model): a key is two 32-bit words, " +
      "made by randomKey(seed) and turned into new independent keys by split(key, n) or " +
      "foldIn(key, i). Any other tensor is not a key.",
    fix: "Pass a key: randomKey(seed), a row of split(key, n), or foldIn(key, i); declare a key input as atServer(i32([2])).",
  },
  FT317: {
    title: "Every client would draw the same numbers",
    message: "{op}() inside map() draws from a key that is the same for every client: foldIn(key, clientIndex()) first",
    explanation:
      "A key broadcast to the clients is the same key on every client, so drawing from it " +
      "inside map() would give every client the same stream (the same dropout mask, the same " +
      "noise). FedTensor refuses that: a draw inside map() needs a key that differs per client.",
    fix:
      "Make the key per client: foldIn(key, clientIndex()) inside map(), or pass a " +
      "{i32[2]}@CLIENTS key input. Shared randomness is drawn outside map() and broadcast.",
  },
  FT318: {
    title: "clientIndex() outside map()",
    message: "clientIndex() is the index of the client running map()'s function: call it inside map()",
    explanation: "Only inside map()'s function is there one client whose index clientIndex() can be.",
    fix: "Call clientIndex() inside the function given to map().",
  },
  FT319: {
    title: "Engine unreachable",
    message: "cannot reach Redis at {url}: {why}",
    explanation:
      "With --engine redis://host:port (and `fedtensor worker --redis`), rounds run through a " +
      "BullMQ queue on that Redis server. The coordinator checks the server when it starts and " +
      "gives up when it stays unreachable during a round, rather than waiting for ever; the last " +
      "checkpoint in --out is kept.",
    fix:
      "Start Redis (`redis-server --port 6379`), check the host, port and firewall, or run " +
      "without --engine. A run that stopped resumes with --resume once Redis is back.",
  },
  FT320: {
    title: "A worker failed a chunk",
    message: "chunk {chunk} of round {round} failed on a worker: {why}",
    explanation:
      "A worker (`fedtensor worker`) ran one chunk of the round's clients and failed every " +
      "attempt BullMQ gave it (a crash is retried; an error in the chunk's program or data is " +
      "the same on every attempt). The round cannot be merged without that chunk.",
    fix:
      "Read the worker's log for the error; check that the workers run the same FedTensor " +
      "version and have the data set the run uses. The run resumes with --resume.",
  },
  FT109: {
    title: "Private client data would leave the clients",
    message: "{what} would release private client data, got {got}: only a DP or secure aggregator (dpSum, secureSum) may take it to the SERVER",
    explanation:
      "The program declares a CLIENTS input private (atClients(spec, { private: true })), and " +
      "every value computed from it stays private at the clients. It may reach the SERVER or " +
      "the program's outputs only through an aggregator that protects it: dpSum (clipped, " +
      "noised: differential privacy) or secureSum (masked: the server sees the sum only). A " +
      "plain reduction (reduceSum, reduceMean, reduceMax, reduceMin, reduceWeightedMean), " +
      "aggregate() (whose report could return one client's record as it is), a gradient that " +
      "sums private cotangents over the clients (the transpose of broadcast), any derivative " +
      "of a released value with respect to the model it was computed from (the noise and " +
      "masks do not reach a derivative), or returning the " +
      "CLIENTS value itself would let the server see one client's data.",
    fix:
      "Aggregate with dpSum(x, { clip, noiseMultiplier, key }) or secureSum(x, ...) instead. " +
      "If the value is not derived from personal data, declare the input without { private: true }. " +
      "Take gradients inside map() (per client) and aggregate the updates with dpSum; where a " +
      "SERVER derivative only meets a released value, write stopGradient(released).",
  },
  FT110: {
    title: "A releasing aggregator (dpSum, secureSum) with a bad option or key",
    message: "{op}() {option} must be {want}, got {got}",
    explanation:
      "dpSum(x, { clip, noiseMultiplier, key }) clips each client's tree to global L2 norm " +
      "clip, sums over the clients and adds Gaussian noise of standard deviation " +
      "noiseMultiplier * clip at the SERVER, drawn from key; secureSum's masks derive from its " +
      "key. The options are SERVER (or local) values: the clients must not choose their own " +
      "clip or noise. clip and noiseMultiplier must be > 0 (noiseMultiplier 0 adds no noise). " +
      "The key must be secret: a SERVER program input, or derived from one by split or foldIn; " +
      "a constant key such as randomKey(0) lets anyone who reads the program regenerate the " +
      "noise or the masks.",
    fix:
      "Pass clip and noiseMultiplier as finite numbers > 0 (or f32[] SERVER values that are > 0 " +
      "when the program runs), and key as a program input declared atServer(i32([2])), fed " +
      "from a secret source (node:crypto), split or folded for each release.",
  },
  FT111: {
    title: "One key feeds two releases",
    message: "{op}() key is {why}: a key feeds at most one release",
    explanation:
      "Two dpSums with one key add the same noise, so their difference is exact; two " +
      "secureSums with one key reuse their masks, so the server can difference the masked " +
      "values. A key is used up by the release it feeds, as JAX's key-reuse checker has it: " +
      "a key derived from it (split, foldIn), or the key it was derived from, is the same " +
      "key for this rule. Inside a loop, a key that does not change from step to step feeds " +
      "the release of every step.",
    fix:
      "Give each release its own key: const [k1, k2] = split(key), or foldIn(key, round) with " +
      "the loop index inside a loop.",
  },
  FT112: {
    title: "A secure sum over too few clients",
    message: "{op}() needs at least {least} clients, got {clients}: {why}",
    explanation:
      "A secure sum reveals the sum of the cohort's values. With one client that is the " +
      "client's value itself; with few, one client's value follows from the sum and what the " +
      "server knows of the others. secureSum refuses cohorts below its minClients option " +
      "(default 2).",
    fix: "Sample larger cohorts, or raise the clients per round; set minClients higher for a stronger threshold.",
  },
  FT114: {
    title: "An aggregator chain that cannot work",
    message: "aggregator {chain}: {why}",
    explanation:
      "An aggregator is a chain of stages from the clients to the server: client stages " +
      "(attack, quantize, zeroing, clip) that each client applies to its update, then server " +
      "stages (mean, median, trimmed-mean, krum, dp, secure) that combine the updates. Some " +
      "chains cannot work: a median, trimmed mean or Krum needs each client's value, which a " +
      "secure sum hides; dp's noise is calibrated to the clip norm, so a clip must come before " +
      "it and nothing may change the clipped updates in between; a round is one Gaussian " +
      "mechanism, so a chain has one dp stage. The types find these where the stages are literal.",
    fix: "Reorder or drop the stage the message names, e.g. clip,dp,secure or quantize,clip,dp; docs/algorithms.md lists the stages.",
  },
  FT115: {
    title: "A value whose placement tsc cannot know, released or returned",
    message: "{what} takes {got}, whose placement tsc cannot know: annotate its placement (AtClients<S>, PrivateAtClients<S>, Tensor<S, D, P>) or write the helper with helper()",
    explanation:
      "A value typed without a placement (a helper's parameter or result typed Tensor<S, D> or " +
      "Tensor, Float<S> used outside helper(), or what operations compute from such a value) " +
      "could be private client data: tsc cannot prove that it is not, so it does not let it " +
      "reach the SERVER through a plain reduction or leave as a program output (fail closed, " +
      "docs/language.md \"Privacy\"). A value typed any, or the result of an operation that " +
      "already failed, is not reported again.",
    fix:
      "Give the helper's parameters and result their placement, e.g. Tensor<[\"B\", 10], " +
      "\"float32\", \"clients\">, AtClients<S> or PrivateAtClients<S>, or make the helper " +
      "placement-generic with helper(name, body): its result then has its arguments' placement.",
  },
  FT116: {
    title: "Private client data through an aggregator not known to release it",
    message: "{what} takes private client data, got {got}, but the aggregator is not known to release it: narrow it with releasesPrivateData(aggregator) first",
    explanation:
      "An aggregator typed Aggregator (releases: boolean) may or may not release: tsc " +
      "does not know whether its chain holds dp, secure or distributed-dp, which alone may " +
      "take private client data (its updates, masks or counts) to the SERVER. A chain without " +
      "them would average private counts and updates in the clear.",
    fix:
      "Test the chain first: inside if (releasesPrivateData(aggregator)), next() takes private data " +
      "(for what aggregatorOf returns, if (aggregator.releases) narrows too); or build the chain " +
      "with aggregator(...) from literal stages, whose type says whether it releases.",
  },
  FT117: {
    title: "Client state that is not at the CLIENTS",
    message: "keepOnClients() takes CLIENTS values, got {got}",
    explanation:
      "keepOnClients() marks a program output as client state: each client keeps its own member " +
      "and reads it back as its input next round, so private state never leaves its client. A " +
      "SERVER or local value has no members to keep, and a value that reached the SERVER is no " +
      "client's state (docs/language.md \"Client state\").",
    fix:
      "Keep the CLIENTS value the clients computed (a map() result, a private input), outside " +
      "map()'s function; a SERVER value the clients need goes to them with broadcast() as an input.",
  },
  FT309: {
    title: "Secure sum input outside its declared range",
    message: "{op}(): {count} client values lie outside the declared range [{low}, {high}] (or are NaN)",
    explanation:
      "secureSum quantizes each client's values to integers in [0, span] and sums them modulo " +
      "2^bits. A value outside [low, high] would wrap around the modulus and corrupt the sum, so " +
      "the runtime counts such values alongside the sum and fails the run instead of clipping " +
      "them silently.",
    fix:
      "Clip the values inside map() before secureSum (for example with minimum/maximum, as " +
      "--secure-clip does for model updates), or declare a wider range.",
  },
  FT311: {
    title: "Secure sum overflow",
    message:
      "{op}(): {clients} clients with quantized values up to {span} do not sum exactly in 2^{bits}; at most {most} clients fit",
    explanation:
      "The masks of a secure sum cancel only modulo 2^bits, so the true sum of the quantized " +
      "values, at most clients x span, must stay below 2^bits (and an int32 sum inside int32).",
    fix: "Raise bits (at most 30), narrow the range or lower the scale, or sum fewer clients per round.",
  },
  FT312: {
    title: "Invalid secureSum options",
    message: "secureSum {what}: {why}",
    explanation:
      "secureSum(x, { bits, key, range, scale, neighbours, maxClients }) needs bits in [1, 30], " +
      "a key i32[2] at the SERVER or local, a finite range [low, high] with low <= high, a " +
      "positive scale for float32 inputs (integers for int32 inputs), an even neighbour count " +
      "of at least 2, and a whole number of clients.",
    fix: "See docs/language.md, section Secure aggregation.",
  },
  FT321: {
    title: "A robust aggregator that cannot work on this cohort",
    message: "{op}: {why}",
    explanation:
      "The robust aggregators drop the clients whose values look least like the others': " +
      "the trimmed mean and the median drop a number of clients from each end of every " +
      "coordinate's order, Krum scores each client by its distance to its nearest neighbours. " +
      "Each needs enough clients for something to be left, and Krum's guarantee needs more " +
      "than 2f + 2 clients for f Byzantine ones (Blanchard et al. 2017).",
    fix:
      "Sample more clients per round, or ask for less: a smaller trim fraction, a smaller " +
      "--krum-byzantine or --krum-select.",
  },
  FT322: {
    title: "An aggregation that needs the whole cohort at once",
    message: "{what} needs every client's update at once: {why}",
    explanation:
      "The coordinate-wise median, the trimmed mean and Krum compare the clients with each " +
      "other, so they cannot fold clients into a fixed-size accumulator chunk by chunk: they " +
      "have no MapReduce form. A round with one of them runs on the whole cohort in this " +
      "process (norm-clip, attackers and quantized updates stream like the mean).",
    fix:
      "Run without --engine, and give --chunk-clients at least --clients-per-round; or use an " +
      "aggregator with a MapReduce form (fedavg, norm-clip, dp, secure).",
  },
  FT325: {
    title: "Federated evaluation without held-out data",
    message: "federated evaluation after round {round}: of the {clients} clients evaluated, {why}",
    explanation:
      "Federated evaluation measures each client's accuracy on the examples it held out of " +
      "training (--client-holdout). A client that holds none out has no accuracy to report, " +
      "so it is left out of the distribution; when every evaluated client is such a client " +
      "there is no distribution at all.",
    fix:
      "Give --client-holdout a larger share, or evaluate more clients (--eval-clients " +
      "0 evaluates all of them).",
  },
  FT326: {
    title: "An aggregator chain that cannot work",
    message: "aggregator {chain}: {why}",
    explanation:
      "The chain of aggregator stages was checked when it was built (aggregator(...), " +
      "--aggregator, a config file's aggregator list): a stage's options are out of range, or " +
      "the stages do not compose, for the reasons FT114 gives at type level: a robust " +
      "aggregator over a secure sum, noise before clipping, a stage between clip and dp, two " +
      "dp stages, a client stage after a server stage.",
    fix: "Reorder or drop the stage the message names; `fedtensor run --help` and docs/algorithms.md list the stages and their options.",
  },
  FT329: {
    title: "Secure groups larger than a chunk",
    message: "a streamed secure sum needs groups of at least {least} clients, but a chunk holds at most {chunk}",
    explanation:
      "A round with a secureSum streams in groups (docs/distributed.md): each chunk of clients, in " +
      "this process or on a worker, is one SecAgg+ group whose masks cancel within it, and the " +
      "server learns each group's sum. No group may be smaller than the sum's minClients " +
      "(--secure-group-min), so a chunk must be able to hold that many clients. A distributed-DP " +
      "round's groups hold at least --min-clients clients, so that each group's noisy sum carries " +
      "the noise the accounting assumes.",
    fix: "Give --chunk-clients at least --secure-group-min (distributed DP: --min-clients), or lower it (a smaller group reveals more of each member's value).",
  },
  FT330: {
    title: "A chunk's result lost while the round merged",
    message: "chunk {chunk} of round {round}: its partial accumulator is no longer in Redis",
    explanation:
      "With --engine, the coordinator reads the chunks' partial accumulators from Redis one at " +
      "a time as it merges them, once every chunk is done. A result that vanished in between " +
      "(Redis restarted without persistence, or someone deleted the key) cannot be redone " +
      "alone: the chunks before it are merged already.",
    fix: "Keep Redis up for the length of a round, or give it persistence; the run resumes from its last checkpoint with --resume.",
  },
  FT334: {
    title: "A secret key written out",
    message: "a secret key cannot be {what}: it is the secret of the releases it feeds",
    explanation:
      "secretKey() draws the key of a release (dpSum's noise, secureSum's masks) from node:crypto. " +
      "Whoever reads the key regenerates the noise or masks, so a SecretKey refuses to be written " +
      "to JSON (configs, metrics, checkpoints) and prints as SecretKey(<redacted>).",
    fix: "Pass the key to program.run() only; draw a fresh one with secretKey() where a new run needs one.",
  },
  FT335: {
    title: "Invalid SecAgg+ parameters",
    message: "SecAgg+ {what}: {why}",
    explanation:
      "SecAgg+ (src/deploy/secagg) takes Flower's SecAggPlusWorkflow parameters: num_shares " +
      "(whole, or a proportion of the cohort), reconstruction_threshold (whole, or a proportion " +
      "of num_shares, and a strict majority of it), clipping_range > 0, quantization_range and " +
      "a power-of-two modulus_range up to 2^32 with clients x quantization_range below it, and " +
      "the round's vector_length and round id.",
    fix: "See docs/deployment.md, section SecAgg+ protocol.",
  },
  FT336: {
    title: "A SecAgg+ message refused",
    message: "SecAgg+ {step} message from {sender} refused: {why}",
    explanation:
      "Every SecAgg+ message is checked at the boundary: its size, its schema, its round and " +
      "step, its sender, that it is not a replay, and its content (a masked vector of the " +
      "round's length with words below the modulus, shares that decrypt and rebuild the " +
      "committed secret). The server logs a refused message and goes on with the others; a " +
      "client refuses a server message that would make it reveal more than the protocol allows.",
    fix:
      "Check that client and server run the same protocol version and round, and that the " +
      "client sends the vector the program's type declares; a client whose shares are refused " +
      "repeatedly is faulty or malicious.",
  },
  FT337: {
    title: "A SecAgg+ round aborted",
    message: "SecAgg+ round {round} aborted at {step}: {why}",
    explanation:
      "A SecAgg+ round needs at least reconstruction_threshold clients at every step, and " +
      "threshold-many consistent shares to remove every survivor's self mask and every dropped " +
      "client's pair masks. Short of that the masks cannot be removed, so the round ends " +
      "without a result and reveals nothing: the masked sum is discarded.",
    fix: "Sample more clients per round, lengthen the step deadlines, or lower reconstruction_threshold (it must stay a majority of num_shares).",
  },
  FT338: {
    title: "A SecAgg+ client used out of order",
    message: "SecAgg+ client {client}: {why}",
    explanation:
      "A SecAgg+ client answers the five steps once each, in order (advertise keys, share " +
      "keys, masked input, consistency check, unmask), for one round, with a vector of the round's length. " +
      "Answering a step twice could reveal both shares of one client to the server.",
    fix: "Make a new SecAggClient for each round and call its steps in order.",
  },
  FT340: {
    title: "The server refused this client",
    message: "the server at {url} refused this client: {why}",
    explanation:
      "`fedtensor serve` admits a client only with a token from its --client-tokens file (one per " +
      "client), speaking its wire version, with well-formed messages under the size limits. A " +
      "refused client does not retry: the same hello would be refused again. The server logs " +
      "every refusal with its reason.",
    fix:
      "Use this client's own token (one line of the server's --client-tokens file, or --token-file), " +
      "and the same FedTensor version as the server.",
  },
  FT341: {
    title: "SecAgg+ share settings that a cohort of the run cannot use",
    message: "--num-shares {numShares} with --reconstruction-threshold {threshold} does not fit a cohort of {clients} clients: {why}",
    explanation:
      "`fedtensor serve`'s secure rounds sum over cohorts of --min-clients (at least 2) to " +
      "--clients-per-round clients. For each, num_shares resolves as Flower's SecAggPlusWorkflow " +
      "does (a count, or a proportion of the cohort; raised to odd, capped at the cohort) and " +
      "reconstruction_threshold (a count, or a proportion of num_shares) must be at least 2, at " +
      "most num_shares and a strict majority of it: with half or fewer, a server that lies about " +
      "who dropped could collect both kinds of share of one client. The server checks every " +
      "cohort size before it starts, so that no round fails on its parameters.",
    fix:
      "Give the threshold as a proportion above 0.5 of num_shares (or leave it out: a strict majority), " +
      "or raise --min-clients so that every cohort has room for the shares.",
  },
  FT342: {
    title: "SecAgg+ ranges whose sum would wrap",
    message:
      "--clients-per-round {clients} x --quantization-range {quantization} is not below --modulus-range {modulus}: " +
      "the secure sum would wrap; {change}",
    explanation:
      "`fedtensor serve --aggregator secure` quantizes each client's clipped values to whole " +
      "numbers in [0, quantization_range] and sums them modulo modulus_range, as Flower's " +
      "SecAggPlusWorkflow does. The sum of n clients is exact only while n x quantization_range " +
      "< modulus_range; past that it wraps and the dequantized mean is wrong without any sign. " +
      "The server checks the largest cohort (--clients-per-round) before it starts.",
    fix:
      "Lower --quantization-range (coarser steps of 2 clipping_range / quantization_range), raise " +
      "--modulus-range (a power of two up to 2^32, the default), or sample fewer clients per round.",
  },
  FT346: {
    title: "Distributed DP parameters that cannot be calibrated",
    message: "distributed DP cannot be calibrated: {why}",
    explanation:
      "Distributed DP (distributedDpSum, --aggregator distributed-dp) scales each client's " +
      "clipped, rotated vector to integers, adds discrete Gaussian noise and wraps it modulo " +
      "2^bits. The scale is the largest with which the sum of maxClients clients, noise included, " +
      "fits the modulus; with too few bits there is no room for the noise or the rounding, and " +
      "each client's noise would fall below one integer step.",
    fix: "Raise bits (up to 30), lower maxClients, or lower kStddevs; give clip, noiseMultiplier and minClients > 0.",
  },
  FT347: {
    title: "A distributed-DP message that does not decode",
    message: "distributed DP: {why}",
    explanation:
      "A client's encoded vector is d integers in [0, 2^bits), d the rotated length; the server's " +
      "sum is taken modulo 2^bits and decoded with the same parameters and rotation key. A vector " +
      "of another length, a value outside the modulus, NaN in a client's update, or a sum of fewer " +
      "clients than the noise was calibrated for would decode to something else than the " +
      "calibrated release.",
    fix: "Encode and decode with the same parameters; send d values in [0, 2^bits); decode only sums of at least minClients clients.",
  },
  FT350: {
    title: "A client's claim outside the run's bounds",
    message: "{client} claimed {claim}, outside the run's bound: {bound}",
    explanation:
      "`fedtensor serve` acts on what a client says about itself only within bounds fixed by the " +
      "run: the number of examples in its ready message sets the steps of the part the server " +
      "compiles for it and, in secure rounds, the cohort's public scale. An unbounded claim could " +
      "exhaust the server's memory, stall a round or shrink every other client's contribution, so " +
      "the server refuses the client and logs it.",
    fix:
      "A client with more examples than the run's largest client needs the server started with a " +
      "larger --max-client-examples; otherwise the client is faulty or malicious (docs/deployment.md).",
  },
  FT351: {
    title: "A client token already in use",
    message: "the token of {client} is in use by a live connection from {address}; a second connection is refused",
    explanation:
      "Each --client-tokens line belongs to one client. When a connection says hello with a token " +
      "whose client is connected, the server checks that the older connection is alive (a " +
      "WebSocket ping); if it answers, the new connection is refused and logged, so that a second " +
      "process with the same token (or a leaked token) cannot knock the client off. A dead old " +
      "connection is replaced, so a client that reconnects after a network fault gets back in.",
    fix:
      "Run each client with its own token. If the token leaked, remove its line from the tokens file " +
      "and send the server SIGHUP (the live connection is closed too), then give the client a new token.",
  },
  FT352: {
    title: "An admin request refused",
    message: "admin request {path} refused: {why}",
    explanation:
      "`fedtensor serve`'s operator endpoints (/healthz, /status, /metrics) answer only requests " +
      "carrying the admin token (--admin-token-file) as `Authorization: Bearer <token>`, compared " +
      "in constant time. Without --admin-token-file they are off.",
    fix: "Start the server with --admin-token-file FILE and send its token, e.g. curl -H \"Authorization: Bearer $(cat FILE)\".",
  },
  FT353: {
    title: "The server's TLS certificate is not trusted",
    message: "the server's certificate at {url} is not trusted: {why}",
    explanation:
      "`fedtensor client` checks a wss:// server's certificate against the system's authorities " +
      "and --ca. A certificate that fails the check fails the same way on every attempt, so the " +
      "client stops instead of retrying.",
    fix: "Give --ca with the server's certificate (a self-signed --tls-cert) or its CA's, and connect by a name the certificate holds.",
  },
  FT354: {
    title: "The client tokens could not be reloaded",
    message: "--client-tokens reload from {path} failed, the previous tokens stay in force: {why}",
    explanation:
      "On SIGHUP, `fedtensor serve` rereads its --client-tokens file, keeps the ids of known " +
      "tokens, admits new ones and disconnects the clients whose tokens left the file. A file that " +
      "cannot be read or holds an invalid token list changes nothing, so that a half-written " +
      "file cannot lock every client out.",
    fix: "Fix the file (one token of at least 16 characters per line, each once) and send SIGHUP again.",
  },
  FT355: {
    title: "A SecAgg+ sum outside the range honest inputs allow",
    message: "SecAgg+ round {round}: the unmasked sum of {clients} clients {why}; the sum is discarded",
    explanation:
      "Each honest client clips its values to [-clipping_range, clipping_range] and quantizes " +
      "them to whole numbers in [0, quantization_range], so the exact sum of n clients lies in " +
      "[0, n x quantization_range] in every coordinate (and n x quantization_range < " +
      "modulus_range, so it cannot wrap). A coordinate outside that range can only come from a " +
      "client that sent something other than its masked, quantized input (a garbage or shifted " +
      "vector): merging it would move the model by an amount no honest client can cause. The " +
      "server cannot tell which client it was (it sees the sum only), so it drops the round.",
    fix:
      "Find the faulty or malicious client from the clients' own logs, or revoke tokens until " +
      "the rounds merge again. A client inside the range can still bias the sum: " +
      "docs/deployment.md, \"Threat model\", says what closes that.",
  },
  FT356: {
    title: "A second SecAgg+ setup of a round this client already unmasked",
    message: "SecAgg+: a setup of round {round}, whose unmask step this client answered in session {session}; refused",
    explanation:
      "A server restarted in the middle of a secure round sets the round up again under a new " +
      "session, and its clients take part again with fresh keys. A client that already answered " +
      "the round's unmask step has helped the server learn one sum of the round; taking part in a " +
      "second sum of the same round over other clients could let the server subtract the two. " +
      "So it refuses, and the round goes on without it.",
    fix:
      "Nothing to do for an honest restart: the client takes part again from the next round. A " +
      "server that sets up rounds it has finished is faulty or malicious.",
  },
  FT357: {
    title: "A SecAgg+ neighbour's keys not signed by the identity this client knows",
    message: "SecAgg+ client {client}: {why}; it leaves the round",
    explanation:
      "Each client signs its round keys with its long-term Ed25519 identity key, over the " +
      "protocol, the session, the round and its id; each client pins the identity key it first " +
      "saw for each peer. Keys without a valid signature, or signed by another identity than the " +
      "pinned one, are keys the server (or someone on the way) made up: sealing shares to them " +
      "would hand this client's secrets to whoever made them.",
    fix:
      "A peer that restarted without its identity key file has a new identity: give `fedtensor " +
      "client --identity-key FILE` so that a restarted client keeps its key. Otherwise the " +
      "server is substituting keys: stop using it.",
  },
  FT360: {
    title: "A run whose privacy plan exceeds --max-epsilon",
    message: "the run's plan spends epsilon {planned} in {rounds} rounds, more than --max-epsilon {max} ({why})",
    explanation:
      "Before any data is read, the run's releases are priced by its accountant (fedtensor plan " +
      "prints the same figures round by round). --max-epsilon is the most the run may spend; a " +
      "run that would spend more is refused rather than stopped part way.",
    fix: "Raise the noise (--dp-noise, --ddp-noise), run fewer --rounds, sample fewer clients per round, or raise --max-epsilon; `fedtensor plan --target-epsilon E` prints the noise a target needs.",
  },
  FT361: {
    title: "A target epsilon no noise multiplier reaches",
    message: "no noise multiplier reaches epsilon {target}: {why}",
    explanation:
      "Calibration looks for the smallest noise multiplier whose rounds spend at most the target " +
      "epsilon at the run's delta. Some targets cannot be met by any noise in the range searched " +
      "(the delta is spent by the noise sampler's own share, or the target is tiny for that many rounds).",
    fix: "Raise the target epsilon or delta, or run fewer rounds or with a smaller sampling rate.",
  },
  FT362: {
    title: "A program whose releases exceed its declared privacy budget",
    message: "the program's releases spend epsilon {spent} in {rounds} rounds at sampling rate {samplingRate}, more than its budget's epsilon {epsilon} (delta {delta}, {accountant} accountant)",
    explanation:
      "program(inputs, body, { budget }) declares what a run of the program may spend: epsilon at " +
      "delta over `rounds` runs, each client taking part with probability `samplingRate`. The " +
      "releases its body calls with number-literal options (dpSum, dpMean, dpQuantile ...) are priced " +
      "by the PLD accountant, and they already spend more than the budget.",
    fix: "Raise the noise multiplier of the releases, call fewer of them, lower the rounds or the sampling rate, or raise the budget.",
  },
  FT363: {
    title: "An invalid privacy budget",
    message: "budget: {why}",
    explanation:
      "A program's budget is { epsilon, delta, rounds?, samplingRate? }: epsilon a finite number > 0, delta in (0, 1), " +
      "rounds a whole number >= 1 (1 by default), samplingRate in (0, 1] (1 by default).",
    fix: "Give the budget as numbers in those ranges, e.g. { epsilon: 3, delta: 1e-5, rounds: 100, samplingRate: 0.01 }.",
  },
  FT364: {
    title: "A release the accountant cannot price",
    message: "{release}: {why}",
    explanation:
      "Pricing a program (programEpsilon, program.epsilon) needs each release's noise as a number and how many " +
      "times it runs: a noise multiplier computed in the program, or a release inside a loop of unknown " +
      "length, leaves the cost unknown. A secure sum of private data releases their exact sum, which no epsilon covers.",
    fix: "Give the release's noiseMultiplier as a number and loops a fixed length, or price the run with the accountant directly (PldAccountant).",
  },
  FT365: {
    title: "Client state that does not fit the run",
    message: "client state: {why}",
    explanation:
      "A run keeps each client's state (its program's keepOnClients outputs: FedPer's heads, " +
      "Ditto's personal models, SCAFFOLD's controls) by client id between rounds, and gives it " +
      "back as the program's input at the same path. Every client's state has the same tensors, " +
      "each kept output has an input to go back to, and a checkpoint's states are each one " +
      "client's (docs/language.md \"Client state\").",
    fix:
      "Declare a CLIENTS input at each kept output's path, with the same shape and dtype; resume a " +
      "run only from its own checkpoints; give --state-memory a size in MiB >= 0.",
  },
  FT366: {
    title: "A served client's state that does not fit its run",
    message: "client state in {where}: {why}",
    explanation:
      "A client of a served stateful run (FedPer, Ditto, SCAFFOLD) keeps its own state between " +
      "rounds, in a file of --state-dir or a browser tab's IndexedDB, by run name and client id " +
      "(docs/deployment.md \"Client state\"). The state read back must be the one this client " +
      "wrote for this run: the tensors the run's client part takes, with their shapes.",
    fix:
      "Give each run its own name (--out) or each client its own --state-dir; remove the state " +
      "of a finished or changed run (its file under --state-dir) so that the client starts fresh.",
  },
  FT367: {
    title: "A --state-dir a client cannot keep its state in",
    message: "--state-dir {path}: {why}",
    explanation:
      "`fedtensor client` keeps a stateful run's client state in --state-dir (by default " +
      "~/.fedtensor/client-state), one file per run and client, mode 0600 in folders of mode 0700, " +
      "written whole or not at all. The folder must be one this client can create and write, and " +
      "no other user may read it: the state is trained on the client's private data.",
    fix: "Point --state-dir at a folder of your own (chmod 700), or leave it out for the default.",
  },
  FT370: {
    title: "A SecAgg+ survivor set its neighbours did not sign",
    message: "SecAgg+ client {client}: {why}; it reveals nothing and leaves the round",
    explanation:
      "Before anyone unmasks, every survivor signs the survivor set the server announced (the " +
      "consistency check of Bonawitz et al. 2017 and Bell et al. 2020), and the server forwards " +
      "the signatures of each client's neighbours. A client reveals its shares only when at " +
      "least reconstruction_threshold signatures verify over the very set it signed: a server " +
      "that told some clients one set and others another (to collect both a client's seed and " +
      "its key) cannot show both groups enough signatures.",
    fix:
      "None for an honest server, which announces one set. Repeated, it means the server lies " +
      "about who dropped out: stop using it. docs/deployment.md, \"Threat model\".",
  },
  FT371: {
    title: "A SecAgg+ neighbour graph that is not the one public randomness gives",
    message: "SecAgg+ client {client}: {why}; it leaves the round",
    explanation:
      "The neighbour graph of a round follows from a seed every client can recompute: SHA-256 " +
      "over the session, the round and the signed key list of the clients that advertised keys. " +
      "A share-keys request whose seed differs is a server choosing who neighbours whom, for " +
      "instance to surround a victim with clients it controls.",
    fix: "Check that client and server run the same protocol version; otherwise the server is faulty or malicious.",
  },
  FT372: {
    title: "A SecAgg+ cohort below the minimum it was promised",
    message: "SecAgg+ client {client}: {why}; it leaves the round",
    explanation:
      "The round's setup announces min_clients, the fewest clients a sum may hold (at least " +
      "reconstruction_threshold, and --min-clients of `fedtensor serve`; distributed DP's noise " +
      "is calibrated for it), and the run announced its minimum when the client joined. A " +
      "client refuses a setup that promises less than the run did, a signed key list or a " +
      "survivor set below the minimum: a sum of fewer clients reveals more of each.",
    fix: "Sample more clients per round, or lengthen the step deadlines so that fewer drop out; a server that announces a small cohort to a client is faulty or malicious.",
  },
  FT373: {
    title: "A SecAgg+ key setup the client will not reuse",
    message: "SecAgg+ client {client}: {why}; it leaves the round",
    explanation:
      "After a round in which every client of the signed key list signed that very list as the " +
      "survivor set, the next rounds (up to key_rounds of them) may reuse its keys, neighbour " +
      "graph and pre-shared self-mask seeds. A client reuses them only when it holds that setup, " +
      "signed that set itself, answered the last round's unmask step, and the setup carries the " +
      "signature of every client of the list over the set: after any dropout a masking key may " +
      "have been rebuilt, and the server then knows pair masks the reused keys would give again.",
    fix: "Nothing to do on the client: the next full setup starts a new key setup. A server that asks for reuse after a dropout or a cohort change is faulty or malicious.",
  },
  FT374: {
    title: "A SecAgg+ setup of a round the client already took part in",
    message: "SecAgg+ client {client}: {why}; it leaves the round",
    explanation:
      "A reused key setup serves each round once, in increasing round order, each with its own " +
      "self-mask seed: a replayed setup of an earlier round (or of the round in progress) would " +
      "have the client mask a second vector under a seed whose shares the server may already " +
      "hold, and the difference of two such vectors would reveal the difference of two inputs.",
    fix: "A server that replays a setup is faulty or malicious; the client's next full setup starts afresh.",
  },
  FT375: {
    title: "A bad SecAgg+ key-reuse setting",
    message: "SecAgg+ key_rounds (--key-rounds) must be a whole number in [1, {max}], got {value}",
    explanation:
      "key_rounds is how many rounds one key setup serves: the setup round and up to key_rounds - 1 " +
      "rounds after it that reuse its keys. Each client pre-shares one self-mask seed per round of " +
      "the window in the setup round, so its share-keys message grows by 33 bytes per neighbour " +
      "and round of the window. 1 turns reuse off.",
    fix: "Pass --key-rounds 1 (no reuse) up to the maximum.",
  },
} as const;

/**
 * FT102's advice, by the placement of the value map() cannot take. A local value has no members
 * to map over, and broadcast() takes only SERVER values (FT101): what works is the constant
 * itself, read inside the function, or an input declared at the CLIENTS. A SERVER value met
 * inside the function was captured, or made there by a reduction, which tsc cannot tell apart
 * (tracing can: a reduction there is FT105).
 */
export const mapAdvice = {
  server: "broadcast it first",
  captured: "it is read inside map()'s function: broadcast it outside and pass it to map() as an argument (a reduction belongs outside map() too)",
  local: "use it inside the function as a constant, or declare the input with atClients(...)",
} as const;

export type MapAdvice = typeof mapAdvice;
export type Catalogue = typeof catalogue;
/**
 * An FT code of the catalogue, such as "FT101": the `code` of every FedTensorError.
 *
 * @example
 * const code: ErrorCode = "FT104";
 * console.log(catalogue[code].title);
 */
export type ErrorCode = keyof Catalogue;
/**
 * Every FT code of the catalogue, in its order: what `ErrorCode` ranges over.
 *
 * @example
 * errorCodes.includes("FT109"); // true
 */
export const errorCodes = Object.keys(catalogue) as ErrorCode[];
