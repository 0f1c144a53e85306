// The store chores of the peer benchmark (scripts/bench --peer),
// with the MongoDB Java driver the sink connector brings (no other client is
// installed for this document shape: tests/tools/store_tool reads aggregates
// only). Run as a single source file on the connector's classpath:
//
//   java -cp 'LIBS/*' PeerStore.java create URI DATABASE COLLECTION
//       creates the collection before the connector starts (FerretDB v1 on
//       PostgreSQL was seen to hang creating it on the connector's first bulk)
//   java -cp 'LIBS/*' PeerStore.java dump URI DATABASE COLLECTION
//       every document as one line of relaxed extended JSON
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoDatabase;
import org.bson.Document;
import org.bson.json.JsonMode;
import org.bson.json.JsonWriterSettings;

public class PeerStore {
    public static void main(String[] args) {
        if (args.length != 4) {
            System.err.println("usage: PeerStore create|dump URI DATABASE COLLECTION");
            System.exit(2);
        }
        try (MongoClient client = MongoClients.create(args[1])) {
            MongoDatabase db = client.getDatabase(args[2]);
            if (args[0].equals("create")) {
                db.createCollection(args[3]);
            } else if (args[0].equals("dump")) {
                JsonWriterSettings js = JsonWriterSettings.builder().outputMode(JsonMode.RELAXED).build();
                for (Document d : db.getCollection(args[3]).find()) System.out.println(d.toJson(js));
            } else {
                System.err.println("PeerStore: unknown command " + args[0]);
                System.exit(2);
            }
        }
    }
}
