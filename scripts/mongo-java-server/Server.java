// mongo-java-server on HOST PORT, memory backend, until killed (see pom.xml).
// Run by scripts/stack as: java -cp 'LIBS/*' Server.java HOST PORT
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

public class Server {
    public static void main(String[] args) throws Exception {
        MongoServer server = new MongoServer(new MemoryBackend());
        server.bind(args[0], Integer.parseInt(args[1]));
        System.err.println("mongo-java-server listening on " + args[0] + ":" + args[1]);
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
        Thread.currentThread().join();
    }
}
