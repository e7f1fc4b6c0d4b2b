#include <fstream>
#include <iostream>
int main() {
	std::ifstream in("data.txt");
	std::cout << in.rdbuf();
}
