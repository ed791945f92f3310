// The base vocabulary of the local recogniser's language model: short sentences a caller says on a phone call to
// an assistant (greetings, answers, numbers, dates and times, requests, questions, closings). The agent's own
// words (prompt, greeting, key terms) are added on top per call (see lm.ts and local.ts).

const NUMBERS = [
  'zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve',
  'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty', 'thirty', 'forty',
  'fifty', 'sixty', 'seventy', 'eighty', 'ninety', 'hundred', 'thousand', 'million', 'oh',
];
const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday', 'today', 'tomorrow', 'tonight', 'yesterday'];
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth', 'tenth', 'twentieth', 'thirtieth'];

export const BASE_SENTENCES: string[] = [
  // greetings and small talk
  'hello', 'hi', 'hi there', 'hello is anyone there', 'hey how are you', 'good morning', 'good afternoon', 'good evening',
  'i am fine thank you', 'i am good thanks', 'how are you doing today', 'nice to meet you', 'who is this', 'who am i speaking with',
  'my name is john', 'my name is sarah smith', 'this is david', 'can you hear me', 'i can hear you', 'i can not hear you',
  'sorry can you repeat that', 'could you say that again please', 'what did you say', 'please speak slowly', 'are you a robot',
  'are you a real person', 'i want to talk to a human', 'can i speak to someone', 'can i speak with a manager',
  // answers
  'yes', 'no', 'yes please', 'no thank you', 'yeah', 'yep', 'nope', 'sure', 'okay', 'ok', 'alright', 'of course', 'right',
  'that is right', 'that is correct', 'that is not right', 'exactly', 'maybe', 'i think so', 'i do not think so', 'i do not know',
  'i am not sure', 'not really', 'absolutely', 'definitely', 'sounds good', 'that sounds great', 'perfect', 'great', 'fine',
  'go ahead', 'hold on', 'wait a moment', 'one moment please', 'just a second', 'let me check', 'let me think',
  'mhm', 'uh huh', 'hmm', 'um', 'uh', 'well', 'so', 'actually', 'never mind', 'forget it', 'no problem', 'that is all',
  // requests
  'i would like to book an appointment', 'i want to make a reservation', 'i need to schedule a meeting',
  'can i book a table for two', 'i would like to cancel my appointment', 'i need to cancel my order',
  'i want to change my booking', 'can we reschedule for next week', 'i would like to move it to friday',
  'i want to check the status of my order', 'where is my order', 'when will my package arrive', 'i have a question about my bill',
  'i have a problem with my account', 'i can not log in to my account', 'i forgot my password', 'please reset my password',
  'i want to pay my bill', 'i would like to make a payment', 'how much does it cost', 'what is the price', 'how much is it',
  'do you have any openings this week', 'is there anything available tomorrow morning', 'what time do you open',
  'what time do you close', 'what are your opening hours', 'where are you located', 'what is your address',
  'can you send me an email', 'can you send me a text message', 'please call me back later', 'call me back tomorrow',
  'i need help', 'i need some help with my order', 'can you help me', 'i would like some information', 'tell me more',
  'i want to buy something', 'i want to return an item', 'i would like a refund', 'i want to speak to support',
  'i am calling about my appointment', 'i am calling about the invoice', 'i am calling to confirm my booking',
  'i would like to order a pizza', 'i want to order food for delivery', 'can i pick it up', 'i will pay by card',
  'i will pay in cash', 'my phone number is', 'my email address is', 'my account number is', 'my order number is',
  'my date of birth is', 'i live in new york', 'i am in london', 'my zip code is',
  // questions
  'what can you do', 'how does it work', 'what is this about', 'why', 'why not', 'how', 'when', 'where', 'what', 'which one',
  'how long will it take', 'how long does it take', 'is that free', 'do i need to pay', 'is it open on sunday',
  'what is the weather like', 'what time is it', 'what day is it today', 'what is two plus two', 'what is the date today',
  'can you tell me a joke', 'do you know', 'is that possible', 'can i do that online', 'do you deliver',
  // dates and times
  'at nine in the morning', 'at three in the afternoon', 'around noon', 'at midnight', 'in the evening', 'next week',
  'this week', 'next month', 'this afternoon', 'tomorrow at ten', 'on monday at two pm', 'at four thirty', 'at half past five',
  'at a quarter to six', 'at seven am', 'in the morning', 'the first of may', 'the second of june', 'on the fifth',
  'in an hour', 'in ten minutes', 'in two days', 'as soon as possible', 'any time', 'later', 'now', 'right now',
  // closings
  'thank you', 'thanks', 'thank you very much', 'thanks a lot', 'that is very helpful', 'thank you for your help',
  'goodbye', 'bye', 'bye bye', 'good bye', 'see you', 'have a nice day', 'have a good day', 'you too', 'talk to you later',
  'that is all for now', 'i am done', 'that will be all', 'i have to go', 'i need to go now', 'end the call', 'please hang up',
  'no that is everything', 'nothing else', 'that is it', 'bye for now',
  // number, day, month and ordinal lists (each word usable alone and in short sequences)
  NUMBERS.join(' '), DAYS.join(' '), MONTHS.join(' '), ORDINALS.join(' '),
  ...NUMBERS.map((n) => `${n}`), ...DAYS.map((d) => `on ${d}`), ...MONTHS.map((m) => `in ${m}`),
];
