/**
 * Carafe's Pregel engine with the shared mailbox (RStore §V-B, Figure 9).
 *
 * <p>A job ({@link io.ferrite.apps.carafe.pregel.PregelJob}) runs a {@link
 * io.ferrite.apps.carafe.pregel.VertexProgram} on a stored graph with W partition workers, threads
 * of the caller's JVM or processes ({@code ferrite graph-worker}). The {@link
 * io.ferrite.apps.carafe.pregel.PregelCoordinator}:
 *
 * <ol>
 *   <li>partitions the internal ids into W contiguous ranges of equal weight ({@link
 *       io.ferrite.apps.carafe.pregel.Partitioner}, {@code 14 + degree(v)} by default, measured);
 *   <li>lays out the control region in the job's control namespace: the {@link
 *       io.ferrite.memory.Barrier} of byte flags, a global area (command, superstep, the previous
 *       superstep's aggregate, the mailbox address) and one area per worker (partition bounds,
 *       superstep statistics, error text, mailbox row);
 *   <li>in phase LOAD each worker reads its vertex records (one read) and adjacency lists (16 MiB
 *       reads) and counts its mailbox row: the messages it can send each partition per superstep
 *       (one per edge; with a combiner, one per distinct target);
 *   <li>sizes and allocates the {@link io.ferrite.apps.carafe.pregel.Mailbox} from the rows (one
 *       allocation in the job's mailbox namespace), which the workers map in PREPARE;
 *   <li>drives the supersteps through barrier phases ({@link io.ferrite.apps.worker.PhaseDriver}):
 *       in superstep k worker j reads its inbox column's containers of parity k % 2, runs compute
 *       on its active vertices, writes its outbox row's containers of parity (k + 1) % 2 (one write
 *       per segment, count word included) and writes its vertices' state back into the graph's
 *       records (1 MiB writes); the job ends when no vertex is active and no message was sent, or
 *       at the superstep cap;
 *   <li>deletes both job namespaces, on success and on failure, and names the worker and the
 *       superstep of a failure.
 * </ol>
 *
 * <p>Inside a worker ({@code Partition}) everything is primitive arrays: a message is 12 bytes in
 * the mailbox and never an object; with a combiner ({@code SUM_DOUBLE} for PageRank, {@code
 * MIN_LONG} for connected components) a send is one fold into an array indexed by target (a send to
 * all neighbours folded at the end of the superstep, block by block of target ids), and the folded
 * messages are emitted in target order at the end of the superstep; without one, messages are
 * appended to the segment buffers and grouped by target with a counting sort on arrival.
 *
 * <p>Measured ({@code PregelSpeed}, PageRank on the {@code bench} R-MAT graph, 1.04 M vertices and
 * 16.8 M edges, worker threads, a shared and busy 2-core machine): about 80 ms a superstep with one
 * worker (the single-threaded in-memory reference: 50 to 60 ms an iteration), 52 to 56 ms with two.
 */
package io.ferrite.apps.carafe.pregel;
