// C++ threads and files: std::async, a hand-rolled pool on a condition
// variable, std::filesystem in temp_directory_path(), iostreams.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <mutex>
#include <numeric>
#include <queue>
#include <thread>
#include <vector>
#include <unistd.h>

namespace fs = std::filesystem;

int main()
{
	std::vector<std::future<long>> futs;
	for (long i = 0; i < 32; i++)
		futs.push_back(std::async(std::launch::async, [i] {
			long s = 0;
			for (long k = 0; k < 100000; k++)
				s += (k * i) % 7;
			return s;
		}));
	long total = 0;
	for (auto &f : futs)
		total += f.get();
	std::cout << "async total " << total << "\n";

	std::mutex m;
	std::condition_variable cv;
	std::queue<std::function<void()>> jobs;
	bool done = false;
	std::atomic<int> ran{0};
	std::vector<std::thread> pool;
	for (int i = 0; i < 8; i++)
		pool.emplace_back([&] {
			for (;;) {
				std::unique_lock<std::mutex> l(m);
				cv.wait(l, [&] { return done || !jobs.empty(); });
				if (jobs.empty())
					return;
				auto j = std::move(jobs.front());
				jobs.pop();
				l.unlock();
				j();
			}
		});
	for (int i = 0; i < 1000; i++) {
		std::lock_guard<std::mutex> l(m);
		jobs.push([&] { ran++; });
		cv.notify_one();
	}
	{
		std::lock_guard<std::mutex> l(m);
		done = true;
	}
	cv.notify_all();
	for (auto &t : pool)
		t.join();
	std::cout << "pool ran " << ran << " jobs\n";

	fs::path dir = fs::temp_directory_path() / ("pool-" + std::to_string(::getpid()));
	fs::create_directories(dir / "a" / "b");
	for (int i = 0; i < 5; i++)
		std::ofstream(dir / "a" / ("f" + std::to_string(i) + ".txt")) << std::string(1000 * i, 'x');
	std::uintmax_t bytes = 0;
	int files = 0;
	for (auto &e : fs::recursive_directory_iterator(dir))
		if (e.is_regular_file())
			bytes += e.file_size(), files++;
	fs::remove_all(dir);
	std::cout << "filesystem " << files << " files " << bytes << " bytes, removed " << !fs::exists(dir) << "\n";
	std::cout << "hardware threads known " << (std::thread::hardware_concurrency() > 0) << "\n";
}
