/**
 * DynamoDB for the usable bench, in a process of its own: dynalite (an implementation of DynamoDB's API on an
 * in-memory LevelDB), answering in about a millisecond where moto, serving every AWS service of the estate from
 * one Python process, takes tens to hundreds under the bench's load. Tells its parent the port over IPC and
 * serves until killed.
 */
import dynalite from 'dynalite';

const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
});
process.on('disconnect', () => process.exit(0));
