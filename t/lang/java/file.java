import java.nio.file.*;

public class Main {
    public static void main(String[] args) throws Exception {
        System.out.print(Files.readString(Path.of("data.txt")));
    }
}
