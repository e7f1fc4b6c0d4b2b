import java.util.*;

public class Main {
    public static void main(String[] args) {
        List<byte[]> keep = new ArrayList<>();
        for (;;)
            keep.add(new byte[1 << 20]);
    }
}
